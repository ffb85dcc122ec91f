"""Is a server wedged right now? The analysis rules, run over the watcher's last polls.

The polls of each server become an in-memory capture (no bundle on disk) and the same
rule registry that `analyze` uses runs over it. A server is *suspected* when a rule
reports a wedge finding (frozen progress with work in flight, a stuck PD queue) or KV
transfer/bootstrap failures rising between the two polls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pdforensics.bundle.ondisk import Bundle
from pdforensics.views.loaded import Fetch, HostView, LoadedCapture, MetricSample, ServiceView
from pdforensics.watch.targets import WatchTarget

RISING_FAILURES = "KV_TRANSFER_FAILURES"
WINDOW = 2  # polls per judgement: the rules compare the first and the last


@dataclass(frozen=True)
class Suspicion:
    """Why one server looks wedged in its latest window."""

    target: str
    keys: tuple[str, ...]
    titles: tuple[str, ...]
    since: float  # when the window that shows it began


def service_view(t: WatchTarget, samples: Sequence[MetricSample],
                 fetches: dict[str, Fetch] | None = None) -> ServiceView:
    return ServiceView(
        host=t.host, role=t.role, kind=t.kind, port=t.port, address=t.address, root_pid=None,
        declared=True, tp_size=1, dp_size=1, unit=None, log_file=None,
        metrics_port=t.metrics_port, metrics=tuple(samples), fetches=dict(fetches or {}),
        processes=(), systemd=None, unit_file=None, log_hits=(), log_source=None)


def in_memory_capture(cluster: str, services: Sequence[ServiceView]) -> LoadedCapture:
    """A LoadedCapture of only these services' polls (nothing on disk)."""
    hosts: dict[str, list[ServiceView]] = {}
    for s in services:
        hosts.setdefault(s.host, []).append(s)
    views = tuple(HostView(name=h, address=svcs[0].address, reachable=True, error=None,
                           simulated_gpu=False, discovered=True, notes=(), services=tuple(svcs),
                           processes=(), gpus=(), gpu_apps=(), gpu_error="not polled", xids=(),
                           established=None, packages={}, uname=None)
                  for h, svcs in hosts.items())
    starts = [m.taken_at for s in services for m in s.metrics] or [0.0]
    return LoadedCapture(bundle=Bundle(Path("."), {}, ()), cluster=cluster, status="complete",
                         started_at=min(starts), finished_at=max(starts),
                         partial_reasons=(), hosts=views)


def is_signature(key: str, severity: str, wedge: bool, outage: bool = False) -> bool:
    """A wedge finding, an outage (the router has no worker left for a role), or KV
    failures rising."""
    return wedge or outage or (key == RISING_FAILURES and severity in ("warning", "critical"))


def judge(cluster: str, server: ServiceView, routers: Sequence[ServiceView]) -> Suspicion | None:
    """Run the rules over one server's window (with the routers' for context)."""
    from pdforensics.analysis.engine import run_rules
    from pdforensics.analysis.rules.context import Context

    good = server.good_samples
    if len(good) < 2:
        return None
    ctx = Context(in_memory_capture(cluster, [server, *routers]))
    findings, _skipped = run_rules(ctx)
    hits = [f for f in findings if is_signature(f.key, f.severity, f.wedge, f.outage)]
    if not hits:
        return None
    return Suspicion(server.label, tuple(dict.fromkeys(f.key for f in hits)),
                     tuple(f.title for f in hits), good[0].taken_at)
