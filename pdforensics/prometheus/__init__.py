"""Prometheus: its HTTP API and the history of key PD series kept in a bundle."""
