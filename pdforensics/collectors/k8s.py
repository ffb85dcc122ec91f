"""Kubernetes pod facts: the pod object, its events, its server container's log, and the
ephemeral debug container when one was asked for. Run by kubectl on the operator's machine
(k8s/sidecar.py), never inside the pod; the planner does not plan them."""

from __future__ import annotations

from typing import Any

from pdforensics.collectors.base import CHEAP, MIB, NORMAL, Runs, Source, Target, register
from pdforensics.collectors.feeds import Feed, Reading, first_ok, log_hits
from pdforensics.model import HostSpec
from pdforensics.transport.kubectl import PodTarget, get_events_argv, get_pod_argv, logs_argv

LOG_TAIL_LINES = 20000


def pod_target(host: HostSpec) -> PodTarget:
    """The pod a host stands for (a plain host reads as a pod of its own name)."""
    if host.address.startswith("k8s://"):
        return PodTarget.parse(host.address)
    return PodTarget(namespace="default", pod=host.name, container=host.name)


def debug_note(acc: dict[str, Any], field: str, r: Reading) -> None:
    """Every debug container request, whether kubectl created it or not: it changed the pod."""
    e = r.entry
    why = "" if e.ok else f" (failed: {e.error or e.stderr.strip()[-200:] or f'exit {e.exit_status}'})"
    acc[field] = (*acc.get(field, ()), " ".join(e.argv or ()) + why)


K8S_POD = register(Source(
    name="k8s_pod", description="the pod object (kubectl get pod -o json): restarts, probes, node",
    scope="host", build=lambda host, t: get_pod_argv(pod_target(host)),
    timeout_s=15, max_bytes=4 * MIB, priority=CHEAP, parser="k8s:parse_pod",
    sample="k8s_pod_lws_sglang.json", extension="json", feeds=Feed("host.k8s_pod", first_ok),
    runs=Runs.PER_POD,
))

K8S_EVENTS = register(Source(
    name="k8s_events", description="the pod's events (kubectl get events -o json)",
    scope="host", build=lambda host, t: get_events_argv(pod_target(host)),
    timeout_s=15, max_bytes=4 * MIB, priority=CHEAP, parser="k8s:parse_events",
    sample="k8s_events_probe_failures.json", extension="json",
    feeds=Feed("host.k8s_events", first_ok), runs=Runs.PER_POD,
))

K8S_LOGS = register(Source(
    name="k8s_logs", description="the server container's log (kubectl logs --tail, bounded)",
    scope="endpoint", build=lambda host, t: logs_argv(pod_target(host), LOG_TAIL_LINES),
    timeout_s=20, max_bytes=16 * MIB, priority=NORMAL, parser="journal:scan_log_signatures",
    sample="log_compose_sglang.txt", feeds=Feed("service.log_hits", log_hits), runs=Runs.PER_POD,
))

K8S_DEBUG = register(Source(
    name="k8s_debug", description="ephemeral debug container added for py-spy (kubectl debug)",
    scope="host", build=lambda host, t: ("kubectl", "debug", pod_target(host).pod),
    timeout_s=30, max_bytes=64 * 1024, priority=CHEAP, parser="k8s:parse_debug_output",
    sample="k8s_debug_output.txt", feeds=Feed("host.k8s_debug", debug_note), runs=Runs.POD_SETUP,
))

__all__ = ["K8S_DEBUG", "K8S_EVENTS", "K8S_LOGS", "K8S_POD", "Target"]
