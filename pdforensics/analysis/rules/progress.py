"""Work in flight vs progress: frozen requests, idle GPUs, a scheduler that does not answer."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, SkipRule, rule
from pdforensics.analysis.metrics_view import fmt, gauge_track, short, work_in_flight
from pdforensics.analysis.rules.context import Context
from pdforensics.views.loaded import ServiceView

#: Router / gateway gauges of requests it holds open (new and old names).
ROUTER_ACTIVE: tuple[str, ...] = (
    "smg_http_requests_active", "sgl_router_http_requests_active",
    "smg_worker_requests_active", "sgl_router_running_requests", "http_requests_active",
)


def metrics_evidence(ctx: Context, svc: ServiceView, text: str) -> Evidence:
    last = svc.good_samples[-1].key if svc.good_samples else None
    return Evidence(svc.host, f"{svc.role}:{svc.port} /metrics", text,
                    ctx.path_of(svc.host, last) if last else None)


def client_connections(ctx: Context, svc: ServiceView) -> int:
    """Established TCP connections to the server's port on its host (ss)."""
    host = next((h for h in ctx.capture.hosts if h.name == svc.host), None)
    if host is None or host.established is None:
        return 0
    return sum(1 for r in host.established.rows if r.local.port == svc.port)


def work_evidence(ctx: Context, svc: ServiceView, at: float | None = None) -> list[Evidence]:
    """Signs that requests wait in the server; `at`: only work already in flight at that time
    (the sample at or before it), not work that arrived later in the capture."""
    out = [metrics_evidence(ctx, svc, f"{what}: {short(t.name)} {t.text()}")
           for what, t in work_in_flight(svc) if (t.at(at) or 0) > 0]
    conns = client_connections(ctx, svc)
    # One connection may be our own probe; more than one means clients hold requests open.
    if conns > 1:
        out.append(Evidence(svc.host, "ss", f"{conns} established connections to :{svc.port}"))
    return out


def router_active(ctx: Context) -> list[Evidence]:
    out = []
    for r in ctx.routers():
        for name in ROUTER_ACTIVE:
            t = gauge_track(r, name)
            if t.last is not None and t.last > 0:
                out.append(metrics_evidence(ctx, r, f"{name} {t.text()}"))
    return out


def idle_note(ctx: Context, svc: ServiceView) -> str:
    idle = ctx.progress(svc).idle
    if idle is None or not idle.comparable:
        return ""
    if idle.rising:
        return (f"scheduler_idle_seconds_total {idle.text()}: the scheduler loop still turns "
                "but schedules nothing")
    # SGLang 0.5.23 writes this counter with its stats, i.e. only when a batch runs: a decode loop
    # busy-polling for KV that never comes leaves it frozen too (seen on the real engine), so a
    # frozen value says the loop ran no batch, not that it is blocked; the stacks tell which.
    return (f"scheduler_idle_seconds_total {idle.text()}: frozen too (SGLang updates it only "
            "when a batch runs; the stacks tell a blocked loop from an idle one)")


@rule("REQUESTS_FROZEN", needs=(Need.METRICS, Need.SAMPLES2), rank=60)
def requests_frozen(ctx: Context) -> Iterator[Finding]:
    """Work in flight while every progress counter stands still across samples."""
    judged = 0
    routers = router_active(ctx)
    for svc in ctx.servers():
        p = ctx.progress(svc)
        if not p.judged:
            continue
        judged += 1
        work = work_evidence(ctx, svc)
        if not p.frozen or not (work or routers):
            continue
        ev: list[Evidence | str] = list(work)
        ev.append(metrics_evidence(ctx, svc, "progress frozen: " + p.text()))
        note = idle_note(ctx, svc)
        if note:
            ev.append(metrics_evidence(ctx, svc, note))
        ev.extend(routers)
        yield Finding(
            "REQUESTS_FROZEN", "critical",
            f"{svc.label}: requests in flight but no progress for {p.span_s:.1f} s "
            f"({p.samples} samples)",
            tuple(ev),
            "Look at the scheduler stacks of this server (py-spy dump of every "
            "sglang::scheduler rank) and at the PD queue and transfer findings; a frozen "
            "server does not recover by itself: capture, then restart prefill and decode "
            "together.",
            section="progress", wedge=True,
        )
    if not judged:
        raise SkipRule("no server has 2 /metrics samples >= 1 s apart with progress counters")


@rule("SCHEDULER_ENDPOINT_HANG", needs=(Need.METRICS, Need.SERVER_INFO), rank=40)
def scheduler_endpoint_hang(ctx: Context) -> Iterator[Finding]:
    """/server_info timed out while /metrics answered: the scheduler is not serving its loop."""
    for svc in ctx.servers():
        if not svc.good_samples:
            continue
        hung = [(k, f) for k in ("server_info", "get_server_info")
                if (f := svc.fetches.get(k)) is not None and not f.answered
                and (f.timed_out or "timed out" in (f.error or "").lower())]
        if not hung:
            continue
        p = ctx.progress(svc)
        ev: list[Evidence | str] = [
            Evidence(svc.host, f"{svc.role}:{svc.port} /{k}",
                     f"no answer after {f.duration_s:.1f} s (timed out)",
                     ctx.path_of(svc.host, f.key))
            for k, f in hung
        ]
        ev.append(metrics_evidence(ctx, svc, f"/metrics answered {len(svc.good_samples)} "
                                   "time(s) during the capture"))
        health = svc.fetches.get("health")
        if health is not None:
            ev.append(Evidence(svc.host, f"{svc.role}:{svc.port} /health",
                               f"status {health.status}" if health.answered
                               else f"no answer ({health.error or 'timed out'})",
                               ctx.path_of(svc.host, health.key)))
        if p.judged:
            ev.append(metrics_evidence(ctx, svc, ("progress frozen: " if p.frozen
                                                  else "progress moving: ") + p.text()))
        note = idle_note(ctx, svc)
        if note:
            ev.append(metrics_evidence(ctx, svc, note))
        frozen = p.judged and p.frozen
        if not p.judged:
            ev.append("only one /metrics sample: cannot tell whether the counters are frozen")
        yield Finding(
            "SCHEDULER_ENDPOINT_HANG", "critical" if frozen or not p.judged else "warning",
            f"{svc.label}: /server_info hangs while /metrics answers"
            + (" and the counters are frozen" if frozen else ""),
            tuple(ev),
            "/server_info asks scheduler rank 0 with no timeout: rank 0 is blocked. Take "
            "py-spy dumps of every scheduler rank (look for a collective or a CUDA sync) "
            "before restarting.",
            section="scheduler", wedge=frozen, subject=svc.label,
            # a blocked scheduler loop, proven by the hang: after a single odd rank (14), before
            # "all ranks stuck together" (16) and the queues that froze because of it (20+)
            rank=15 if frozen else None,
        )


def _server_gpu_indices(ctx: Context, svc: ServiceView) -> tuple[set[int] | None, str]:
    host = next(h for h in ctx.capture.hosts if h.name == svc.host)
    pids = {p.info.pid for p in svc.processes}
    uuids = {a.gpu_uuid for a in host.gpu_apps if a.pid in pids and a.gpu_uuid}
    if uuids:
        return {g.index for g in host.gpus if g.uuid in uuids and g.index is not None}, \
            "nvidia-smi compute apps"
    cvd = svc.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd:
        try:
            return {int(x) for x in cvd.split(",") if x.strip()}, "CUDA_VISIBLE_DEVICES"
        except ValueError:
            pass
    return None, "every GPU of the host"


@rule("GPU_IDLE_WITH_WORK", needs=(Need.METRICS, Need.GPUS), rank=65)
def gpu_idle_with_work(ctx: Context) -> Iterator[Finding]:
    """GPUs at ~0 % while requests wait in the server.

    The work must already have been there when nvidia-smi read the GPUs: a server that had
    nothing to do at that read and took requests a second later is not idle with work."""
    for svc in ctx.servers():
        host = next(h for h in ctx.capture.hosts if h.name == svc.host)
        if not host.gpus:
            continue
        read_at = next((e.started_at for e in ctx.capture.results
                        if e.host == svc.host and e.source == "nvidia_smi_query"), None)
        work = work_evidence(ctx, svc, at=read_at)
        if not work:
            continue
        want, how = _server_gpu_indices(ctx, svc)
        gpus = [g for g in host.gpus if g.utilization_gpu_pct is not None
                and (want is None or g.index in want)]
        if not gpus or any((g.utilization_gpu_pct or 0) > 5 for g in gpus):
            continue
        util = ", ".join(f"GPU {g.index} {fmt(g.utilization_gpu_pct)} %" for g in gpus)
        ev: list[Evidence | str] = [Evidence(svc.host, "nvidia-smi", f"{util} ({how})",
                                             ctx.path_of(svc.host, "nvidia_smi_query"))]
        ev.extend(work)
        yield Finding(
            "GPU_IDLE_WITH_WORK", "warning",
            f"{svc.label}: its GPUs are idle ({util}) while requests wait",
            tuple(ev),
            "Idle GPUs with queued work mean the scheduler is not launching batches: see "
            "the queue, stack and progress findings for where requests are held.",
            section="gpu",
        )
