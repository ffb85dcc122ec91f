"""Since when: the start of the trouble, from the evidence of the findings that set the verdict.

Only evidence inside the window (views/window.py) counts, and only evidence tied to a finding
that sets the verdict: a finding's own time (a breaker's first error, an Xid), else the log
signatures of the servers its evidence names that belong to its kind of trouble (a frozen KV
hop is dated by the KV transfer lines, not by an out-of-memory line of the same server). A
signature whose run of lines began before the window and reaches into it dates the finding
from the run's start: one incident that lasted longer than the look-back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pdforensics.analysis.findings import Evidence, EvidenceWindow, Finding, Since, Verdict
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.journal import SignatureHit
from pdforensics.parsers.kernel_log import XID
from pdforensics.views.loaded import LoadedCapture

_KV = frozenset({
    "KV_BOOTSTRAP_TIMEOUT", "KV_WAITING_TIMEOUT", "KV_DONE_SIGNAL_MISSING", "DECODE_TRANSFER_FAILED",
    "PREFILL_TRANSFER_FAILED", "PREFILL_BOOTSTRAP_FAILED", "DECODE_HANDSHAKE_FAILED",
    "KV_TRANSFER_ERROR", "LOST_PREFILL_CONNECTION", "BOOTSTRAP_INFO_FAILED",
    "BOOTSTRAP_REGISTER_FAILED", "PREFILL_TRANSFER_THREAD_DEAD", "MOONCAKE_METADATA_NOT_FOUND",
    "TRANSFER_QUEUE_RISING", "PREALLOC_QUEUE_RISING", "ABORTED_BY_ABORTREQ", "HEALTH_CHECK_FAILED"})
_CRASH = frozenset({"SCHEDULER_EXCEPTION", "PYTHON_TRACEBACK", "CUDA_ERROR", "NCCL_ERROR",
                    "OUT_OF_MEMORY", "HEALTH_CHECK_FAILED"})
_PRESSURE = frozenset({"OUT_OF_MEMORY", "PREALLOC_QUEUE_RISING", "TRANSFER_QUEUE_RISING"})
ANY = frozenset({"*"})  # every cause and consequence signature of the server

#: a rule key -> the log signatures that date its findings (none listed: not dated by logs)
RELATED: dict[str, frozenset[str]] = {
    **dict.fromkeys(("DECODE_TRANSFER_STUCK", "DECODE_PREALLOC_STUCK", "PREFILL_BOOTSTRAP_STUCK",
                     "PREFILL_INFLIGHT_STUCK", "KV_TRANSFER_FAILURES", "STRANDED_BOOTSTRAP"), _KV),
    **dict.fromkeys(("REQUESTS_FROZEN", "ALL_RANKS_STUCK", "RANK_OUTLIER", "SCHEDULER_ENDPOINT_HANG",
                     "SCHEDULER_PROBE_HANG", "GPU_IDLE_WITH_WORK", "FORGOTTEN_REQUESTS",
                     "ENDPOINT_HANG", "LOG_SIGNATURE"), ANY),
    "PROCESS_STATE": _CRASH,
    **dict.fromkeys(("KV_CACHE_PRESSURE", "PREALLOC_LEAK"), _PRESSURE),
    **dict.fromkeys(("ROUTER_BREAKER_OPEN", "DECODE_ONLY_DISPATCH"), frozenset({"DECODE_STREAM_ERROR"})),
}


def hit_start(h: SignatureHit) -> float | None:
    """When the signature's current run began (its first line when runs are unknown)."""
    return h.run_start if h.run_start is not None else h.first_epoch


def _hosts(f: Finding) -> set[str]:
    hosts = {e.host for e in f.evidence if isinstance(e, Evidence) and e.host}
    if f.subject:
        hosts.add(f.subject.split(" ", 1)[0])
    return hosts


def finding_since(ctx: Context, f: Finding) -> Since | None:
    """The finding's own time, else the earliest run start of its related log signatures on
    the servers its evidence names (inside the window only)."""
    if f.since is not None:
        return Since(f.since, f"the first evidence of {f.key}")
    related = RELATED.get(f.key)
    if not related:
        return None
    hosts = _hosts(f)
    best: Since | None = None
    for svc in ctx.capture.services():
        if svc.host not in hosts:
            continue
        for h in svc.log_hits:
            if h.kind == "noise" or (related is not ANY and h.key not in related):
                continue
            t = hit_start(h)
            if t is not None and (best is None or t < best.at):
                best = Since(t, f"{h.key} in the {svc.label} log")
    return best


def setting_findings(verdict: Verdict, findings: Sequence[Finding]) -> list[Finding]:
    """The findings that set the verdict: outage findings for OUTAGE, wedge findings for
    WEDGED, else the critical ones, else the warnings."""
    if verdict == "HEALTHY":
        return []
    if verdict == "OUTAGE":
        return [f for f in findings if f.outage]
    if verdict == "WEDGED":
        return [f for f in findings if f.wedge and f.severity == "critical"]
    crit = [f for f in findings if f.severity == "critical"]
    return crit or [f for f in findings if f.severity == "warning"]


def verdict_since(ctx: Context, verdict: Verdict, findings: Sequence[Finding]) -> Since | None:
    """The earliest time among the findings that set the verdict; None when none is dated."""
    dated = [s for f in setting_findings(verdict, findings) if (s := finding_since(ctx, f))]
    return min(dated, key=lambda s: s.at) if dated else None


def _utc(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t)) if t is not None else "?"


def _rank(r: int | None) -> str:
    return "?" if r is None else str(r)


def evidence_window(capture: LoadedCapture) -> EvidenceWindow:
    """Where the window starts and one line per piece of timed evidence before it."""
    history: list[str] = []
    for s in capture.services():
        for h in s.log_history:
            history.append(f"{s.label} log: {h.key} ({h.kind}) x{h.count}, "
                           f"{_utc(h.first_epoch)} .. {_utc(h.last_epoch)}")
        old = s.router_log_history
        by_worker: dict[str, list[str]] = {}
        for t in old.transitions if old is not None else ():
            by_worker.setdefault(t.worker, []).append(f"{t.time or '?'} {t.from_state} -> {t.to_state}")
        for worker, moves in by_worker.items():
            history.append(f"{s.label} log: {len(moves)} breaker transition(s) of {worker}, "
                           f"first {moves[0]}, last {moves[-1]}")
        for e in old.tallies if old is not None else ():
            history.append(f"{s.label} log lines {e.first_line}-{e.last_line}: {e.count} x "
                           f"{e.kind.replace('_', ' ')} {e.role} ({e.first_time} .. {e.last_time})")
    for hv in capture.hosts:
        for x in hv.xid_history:
            history.append(f"{hv.name} kernel log: Xid {x.xid} on {x.pci} at {_utc(x.epoch)}")
        for ev in hv.kernel_history:  # the Xids among them are listed above
            if ev.kind != XID:
                what = " ".join(w for w in (ev.kind, ev.device or ev.process) if w)
                history.append(f"{hv.name} kernel log line {ev.lineno}: {what} at {_utc(ev.epoch)}")
        for path, d in hv.fr_history:
            history.append(f"{hv.name} Flight Recorder dump {path} (rank {_rank(d.rank)}): "
                           f"{len(d.entries)} entries, the newest at {_utc(d.newest_epoch)}")
    hows = sorted({s.window_from for s in capture.services() if s.window_from})
    return EvidenceWindow(capture.window_start, ", ".join(hows) or "whole logs (no window)",
                          tuple(history))
