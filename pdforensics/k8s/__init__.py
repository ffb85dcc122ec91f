"""Kubernetes: SGLang pods found by label selector become the capture's hosts; pod facts
(the pod object, events, logs) are read by kubectl beside the capture."""
