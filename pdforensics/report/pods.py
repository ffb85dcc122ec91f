"""Kubernetes pods beside the topology: node, group, restarts, last termination, probes,
warning events (from `capture --k8s`); empty for other captures."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.parsers.k8s import Probe
from pdforensics.views.loaded import LoadedCapture


@dataclass(frozen=True)
class PodRow:
    host: str
    pod: str  # namespace/name
    node: str
    group: str
    container: str
    restarts: int
    last_termination: str
    probes: str
    warnings: int  # Warning events
    debug: bool  # an ephemeral debug container was requested


def _probe(p: Probe) -> str:
    what = p.path if p.handler == "http" else p.port if p.handler in ("tcp", "grpc") else p.handler
    return f"{p.kind} {p.handler} {what or ''} ({p.failure_threshold}x{p.period_s}s)"


def pod_rows(capture: LoadedCapture) -> tuple[PodRow, ...]:
    rows = []
    for h in capture.hosts:
        pod = h.k8s_pod
        if pod is None:
            continue
        c = pod.server
        g = pod.group
        last = f"{c.last_reason or '?'} exit {c.last_exit_code} {c.last_finished_at or ''}".strip() \
            if c is not None and (c.last_reason or c.last_exit_code is not None) else "—"
        rows.append(PodRow(
            host=h.name, pod=f"{pod.namespace}/{pod.name}", node=pod.node or "—",
            group=f"{g.kind} {g.name}" + (f" [{g.index}]" if g.index else "") if g else "—",
            container=c.name if c else "—", restarts=c.restart_count if c else 0,
            last_termination=last, probes="; ".join(_probe(p) for p in c.probes) if c else "",
            warnings=sum(1 for e in h.k8s_events if e.type == "Warning"), debug=bool(h.k8s_debug)))
    return tuple(rows)
