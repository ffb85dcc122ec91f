"""Known log lines (GPU Xid events: rules/gpu_host.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from pdforensics.analysis.findings import Evidence, Finding, Need, Severity, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.journal import SignatureHit
from pdforensics.views.loaded import ServiceView

#: A cause seen this long before the capture started still counts as current.
RECENT_S = 900.0


def _when(t: float | None) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t)) + "Z" if t is not None else "?"


def same_line_groups(hits: Sequence[SignatureHit]) -> list[list[SignatureHit]]:
    """Hits grouped by their first sample line: several signatures matching one log line
    are one event seen several ways (order of first appearance kept)."""
    groups: dict[str, list[SignatureHit]] = {}
    for i, h in enumerate(hits):
        line = h.samples[0] if h.samples else f"\0{i}"  # no sample: a group of its own
        groups.setdefault(line, []).append(h)
    return list(groups.values())


def _hit_evidence(svc: ServiceView, group: Sequence[SignatureHit], path: str | None) -> Evidence:
    first = group[0]
    keys = ", ".join(f"{h.key} x{h.count}" for h in group)
    kinds = "/".join(dict.fromkeys(h.kind for h in group))
    starts = [h.first_epoch for h in group if h.first_epoch is not None]
    ends = [h.last_epoch for h in group if h.last_epoch is not None]
    ranks = sorted({r for h in group for r in h.ranks})
    where = f" [{', '.join(ranks)}]" if ranks else ""
    sample = first.samples[0][:300] if first.samples else ""
    return Evidence(svc.host, f"{svc.role} {svc.log_source or 'log'}",
                    f"{keys} ({kinds}), first {_when(min(starts) if starts else None)}, "
                    f"last {_when(max(ends) if ends else None)}{where}: {sample}", path)


@rule("LOG_SIGNATURE", needs=(Need.LOGS,), rank=80)
def log_signature(ctx: Context) -> Iterator[Finding]:
    """Known SGLang / NCCL / CUDA log lines matched, with first/last time and count; the
    signatures that match one line are one piece of evidence."""
    since = (ctx.capture.started_at or time.time()) - RECENT_S
    for svc in ctx.capture.services():
        if not svc.log_hits:
            continue
        path = svc.log_entry.path if svc.log_entry is not None else None
        recent_causes = [h.key for h in svc.log_hits if h.kind == "cause"
                         and (h.last_epoch is None or h.last_epoch >= since)]
        groups = same_line_groups(svc.log_hits)
        ev: list[Evidence | str] = [_hit_evidence(svc, g, path) for g in groups]
        sev: Severity = "warning" if recent_causes else "info"
        starts = [h.run_start if h.run_start is not None else h.first_epoch
                  for h in svc.log_hits if h.kind != "noise"]
        dated = [t for t in starts if t is not None]
        keys = ", ".join("/".join(h.key for h in g) + f" x{max(h.count for h in g)}"
                         for g in groups[:5])
        yield Finding(
            "LOG_SIGNATURE", sev,
            f"{svc.label} log: {keys}"
            + ("" if recent_causes else f" (nothing in the {RECENT_S / 60:.0f} min before "
               "the capture)"),
            tuple(ev),
            "Read the first cause line in context (the log file / journal in the bundle): "
            "consequences such as aborts and health-check failures follow it.",
            section="logs", subject=svc.label, since=min(dated) if dated else None)


def _main_frames(svc: ServiceView) -> list[str]:
    """Where SGLang's own watchdog dumps (in the log) found each rank's main thread."""
    out = []
    for d in svc.log_stacks:
        main = next((t for t in d.threads if t.name == "MainThread"), d.threads[0] if d.threads else None)
        python = [f for f in main.frames if not f.native] if main is not None else []
        if python:
            out.append(f"{d.rank or 'pid ' + str(d.pid)}: {python[0].function} ({python[0].location()})"
                       + (f" <- {python[1].function}" if len(python) > 1 else ""))
    return list(dict.fromkeys(out))


@rule("SCHEDULER_WATCHDOG", needs=(Need.LOGS,), rank=35)
def scheduler_watchdog(ctx: Context) -> Iterator[Finding]:
    """SGLang's own scheduler watchdog fired: a batch ran past --watchdog-timeout (its verdict
    that the scheduler is stuck); the stacks it dumped into the log say where."""
    since = (ctx.capture.started_at or time.time()) - RECENT_S
    for svc in ctx.servers():
        hits = [h for h in svc.log_hits if h.key == "WATCHDOG_TIMEOUT"
                and (h.last_epoch is None or h.last_epoch >= since)]
        if not hits:
            continue
        path = svc.log_entry.path if svc.log_entry is not None else None
        ev: list[Evidence | str] = [_hit_evidence(svc, [h], path) for h in hits]
        ev += [Evidence(svc.host, f"{svc.role} log", f"the watchdog's py-spy dump: {f}", path)
               for f in _main_frames(svc)[:4]]
        ranks = sorted({r for h in hits for r in h.ranks})
        yield Finding(
            "SCHEDULER_WATCHDOG", "critical",
            # the server is the subject (its label can be a file name: kept out of the claim)
            f"SGLang's scheduler watchdog fired on the {svc.role} server"
            + (f" ({', '.join(ranks)})" if ranks else "") + ": a batch ran past --watchdog-timeout",
            tuple(ev),
            "The dumped stack is where the batch hung (a collective: find the rank behind; a CUDA "
            "sync or a kernel: check the GPU). SGLang then tears the server down: its launcher "
            "dumps stacks and waits for CUDA core dumps in its signal handler (its HTTP server, "
            "/metrics included, answers nothing meanwhile), then kills the process tree; restart "
            "prefill and decode together.",
            section="logs", wedge=True, subject=svc.label,
            # SGLang's own verdict on its scheduler, with the stack of the batch that hung: ahead
            # of a frozen /server_info hang (15), which is that same blocked loop seen from
            # outside (the real engine's TP 2 watchdog row, docs/real-engine.md)
            rank=14)
