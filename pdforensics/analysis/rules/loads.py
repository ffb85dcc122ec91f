"""Load documents (/v1/loads, /get_load, the router's /get_loads and /workers, /model_info)
and the ways they mislead: a load snapshot that stopped while it still showed work is a
scheduler that stopped publishing; zeros are not idleness; /model_info proves nothing."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.load_json import read_load_doc

_KEYS = ("loads", "get_load", "get_loads", "model_info", "get_model_info")


@rule("LOAD_SNAPSHOT", needs=(Need.SERVERS,), rank=55)
def load_snapshot(ctx: Context) -> Iterator[Finding]:
    """What each load document says and how it misleads; a snapshot older than 30 s that
    still shows work means the scheduler stopped publishing its load (it is not iterating)."""
    for svc in ctx.capture.services():
        for key in _KEYS:
            f = svc.fetches.get(key)
            if f is None or f.response is None:
                continue
            doc = read_load_doc(f.json())
            if doc is None:
                continue
            stale = doc.stale()
            where = ctx.path_of(svc.host, f.key)
            ev: list[Evidence | str] = [Evidence(svc.host, f"/{key}", note, where)
                                        for note in doc.notes]
            ev += [f"dp rank {r.dp_rank}: running {r.running}, waiting {r.waiting}"
                   + (f", PD queues {dict(r.queues)}" if r.queues else "") for r in doc.ranks[:8]]
            if not ev:
                continue
            yield Finding(
                "LOAD_SNAPSHOT", "warning" if stale else "info",
                f"{svc.label} /{key}: {doc.kind}"
                + (f": the load snapshot of {len(stale)} rank(s) is "
                   f"{max((doc.answered_at or 0) - (r.snapshot_at or 0) for r in stale):.0f} s "
                   "old and still shows work: the scheduler stopped publishing" if stale else ""),
                tuple(ev),
                "Judge progress from /metrics counters over two samples and the stacks, not from "
                "one load document: it is a snapshot the scheduler published, or (model_info) "
                "an answer of the HTTP process alone.", section="metrics", subject=svc.label)
