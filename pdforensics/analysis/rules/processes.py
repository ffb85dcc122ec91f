"""Process state of the ranks, and the order in which services last (re)started."""

from __future__ import annotations

import time
from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.catalog.cmdline import flag_value
from pdforensics.views.loaded import ServiceView

STATE_WORDS = {"Z": "zombie (exited, not reaped)", "T": "stopped", "t": "stopped by a tracer",
               "D": "in uninterruptible sleep (D state)", "X": "dead"}
#: A server restarted this long after its peers counts as restarted alone.
ALONE_S = 60.0


def expected_ranks(svc: ServiceView) -> int:
    nnodes = flag_value(svc.cmdline, "--nnodes")
    try:
        n = max(1, int(nnodes)) if nnodes else 1
    except ValueError:
        n = 1
    return max(1, svc.tp_size * svc.dp_size // n)


@rule("PROCESS_STATE", needs=(Need.PROCESSES, Need.SERVERS), rank=10)
def process_state(ctx: Context) -> Iterator[Finding]:
    """A rank dead, zombie, stopped or in D state; fewer ranks than tp/dp size says."""
    for svc in ctx.servers():
        p = ctx.progress(svc)
        frozen = p.judged and p.frozen
        logs = [Evidence(svc.host, f"{svc.role} log", f"{h.key} x{h.count}: {h.samples[0][:300]}")
                for h in svc.log_hits if h.key in ("SCHEDULER_EXCEPTION", "CUDA_ERROR",
                                                   "NCCL_ERROR", "OUT_OF_MEMORY") and h.samples]
        progress_ev = ([f"{svc.label} progress frozen: {p.text()}"] if frozen else [])
        if svc.root_pid is None or svc.root is None:
            if svc.declared and not ps_failed(ctx, svc.host):  # no table: a gap, not a verdict
                yield Finding(
                    "PROCESS_STATE", "critical",
                    f"{svc.label}: no server process found for this declared service",
                    (Evidence(svc.host, "ps", "no process listens on or matches "
                              f":{svc.port}"), *logs),
                    "Check the unit (systemctl status / journalctl) and why it exited.",
                    section="processes", subject=svc.label)
            continue
        want = expected_ranks(svc)
        have = svc.ranks
        if len(have) < want:
            present = ", ".join(sorted(r.info.rank or str(r.info.pid) for r in have)) or "none"
            yield Finding(
                "PROCESS_STATE", "critical",
                f"{svc.label}: {len(have)} of {want} scheduler ranks alive "
                f"(tp {svc.tp_size} x dp {svc.dp_size}); present: {present}",
                (Evidence(svc.host, "ps", f"scheduler processes under pid {svc.root_pid}: "
                          f"{present}; expected {want}"), *logs, *progress_ev),
                "A rank died and the server did not exit: its peers wait for it forever. "
                "Read the rank's last log lines (exception, CUDA/NCCL error, OOM), check "
                "Xid events, then restart the whole server (and its PD partner).",
                section="processes", wedge=frozen, subject=svc.label)
        for r in (*have, *(x for x in svc.processes if x.info.kind != "scheduler")):
            st = r.info.state[:1]
            if st not in STATE_WORDS:
                continue
            bad = st in ("Z", "X", "T", "t")
            # one D-state read while the counters move is a moment in the kernel (a page
            # fault, a driver call), not a hang: info; it matters when progress is frozen
            passing = not bad and p.judged and p.moved
            yield Finding(
                "PROCESS_STATE", "critical" if bad else "info" if passing else "warning",
                f"{svc.label}: {r.info.kind} {r.info.rank or ''} pid {r.info.pid} is "
                f"{STATE_WORDS[st]}".replace("  ", " ")
                + (" at the ps read, yet the server progresses" if passing else ""),
                (Evidence(svc.host, "ps", f"pid {r.info.pid} state {r.info.state}: "
                          f"{r.info.args[:200]}"), *logs, *progress_ev),
                "A D-state process waits in the kernel (GPU driver, NFS, disk): check dmesg "
                "and Xid events; a stopped one was SIGSTOPped or is traced; a zombie has "
                "exited and its parent did not reap it.",
                section="processes", wedge=bad and frozen, subject=svc.label)


def ps_failed(ctx: Context, host: str) -> str | None:
    """Why the host's process table is unknown (ps missing, failed, timed out), or None."""
    rows = [r for r in ctx.capture.results if r.host == host and r.source == "ps"]
    if not rows or any(r.ok for r in rows):
        return None
    r = rows[-1]
    lines = r.stderr.strip().splitlines()
    return r.error or ("timed out" if r.timed_out else lines[-1][:200] if lines
                       else f"exit status {r.exit_status}")


def _started(svc: ServiceView) -> tuple[float | None, str, int | None]:
    u = svc.systemd
    if u is not None and u.active_enter is not None and u.active_enter.epoch:
        return u.active_enter.epoch, "systemd ActiveEnterTimestamp", u.n_restarts
    root = svc.root
    if root is not None and root.info.start_epoch:
        return root.info.start_epoch, "process start time", None
    return None, "", None


def _ago(t: float, now: float) -> str:
    s = max(0.0, now - t)
    if s < 120:
        return f"{s:.0f} s ago"
    if s < 7200:
        return f"{s / 60:.0f} min ago"
    return f"{s / 3600:.1f} h ago"


@rule("RESTART_ORDER", needs=(Need.SERVERS,), rank=75)
def restart_order(ctx: Context) -> Iterator[Finding]:
    """When router, prefill and decode last (re)started; a server restarted alone."""
    now = ctx.capture.started_at or time.time()
    rows = []
    for svc in [*ctx.routers(), *ctx.servers()]:
        t, how, restarts = _started(svc)
        if t is not None:
            rows.append((t, svc, how, restarts))
    if len(rows) < 2:
        return
    rows.sort(key=lambda r: r[0])
    ev: list[Evidence | str] = []
    for t, svc, how, restarts in rows:
        extra = f", NRestarts={restarts}" if restarts else ""
        ev.append(Evidence(svc.host, how, f"{svc.role}:{svc.port} started "
                           f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(t))}Z "
                           f"({_ago(t, now)}{extra})"))
    alone = []
    for t, svc, _how, _r in rows:
        if svc.role not in ("prefill", "decode"):
            continue
        others = [o for o in rows if o[1] is not svc]
        if others and all(t - o[0] > ALONE_S for o in others):
            alone.append((svc, t - max(o[0] for o in others)))
    restarted = [r for r in rows if r[3]]
    if alone:
        svc, gap = alone[0]
        yield Finding(
            "RESTART_ORDER", "warning",
            f"{svc.label} restarted alone, {gap:.0f} s after every other service",
            tuple(ev),
            "A prefill or decode server restarted without its partner and the router keeps "
            "stale bootstrap/worker state: restart router, prefill and decode together "
            "(prefill and decode first, then the router).",
            section="restarts")
        return
    yield Finding(
        "RESTART_ORDER", "info",
        "start order: " + " → ".join(f"{r[1].role}" for r in rows)
        + (f" ({len(restarted)} with systemd restarts)" if restarted else ""),
        tuple(ev), "No action: for reference when comparing with a baseline.",
        section="restarts")
