"""/metrics scrapes and JSON endpoints (/server_info) -> clues: the server's role, whether
anything waits in its queues, and whether its counters moved between samples.

A scrape is read for what one sample can say: the role (``engine_type``; a router's ``smg_``
/ ``sgl_router_`` names), the queues (waiting, PD bootstrap/prealloc/transfer): nothing
queued means nothing is stuck there. Progress needs two samples (counters rising); the
rules' frozen-counter findings already say when they do not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.prometheus import MetricsSnapshot

_QUEUES = ("sglang:num_queue_reqs", "sglang:num_prefill_bootstrap_queue_reqs",
           "sglang:num_prefill_prealloc_queue_reqs", "sglang:num_prefill_inflight_queue_reqs",
           "sglang:num_decode_prealloc_queue_reqs", "sglang:num_decode_transfer_queue_reqs")
_PROGRESS = ("sglang:generation_tokens_total", "sglang:prompt_tokens_total",
             "sglang:num_requests_total", "smg_router_requests_total")


def _role(snap: MetricsSnapshot) -> str | None:
    names = snap.names()
    if any(n.startswith(("smg_", "sgl_router_")) for n in names):
        return "router"
    engine = {v for s in snap.samples if (v := s.label("engine_type"))}
    roles = engine & {"prefill", "decode"}
    return roles.pop() if len(roles) == 1 else None


@reader("metrics")
def metric_clues(src: Source) -> Iterator[Clue]:
    """Role, queued requests, counter progress across samples."""
    if not src.metrics:
        return
    t0, first = src.metrics[0]
    t1, last = src.metrics[-1]
    role = _role(last)
    sglang = any(n.startswith("sglang") for n in last.names())
    if sglang or role == "router":
        yield Clue(key="SGLANG_SERVER" if role != "router" else "ROUTER", label="noise",
                   text=f"/metrics of an SGLang {role or 'server'}", source=src.path,
                   time=t1, role=role, host=src.host, why="its metric names and labels")
    queued = {q: v for q in _QUEUES if (v := last.value_sum(q)) is not None and v > 0}
    if queued:
        yield Clue(key="REQUESTS_QUEUED", label="noise", time=t1, role=role, host=src.host,
                   text="queued: " + ", ".join(f"{k.split(':')[1]}={v:g}" for k, v in queued.items()),
                   source=src.path, why="requests wait in these queues at the last sample")
    elif sglang:
        yield Clue(key="NOTHING_QUEUED", label="noise", time=t1, role=role, host=src.host,
                   text="no request waits in any queue (waiting, PD bootstrap/prealloc/transfer)",
                   source=src.path, wedge=False, why="nothing queued: nothing stuck in a queue")
    elif role == "router":
        yield Clue(key="ROUTER_SCRAPE", label="noise", time=t1, role=role, host=src.host,
                   text="router scrape", source=src.path, wedge=False,
                   why="a router answering its metrics port")
    if len(src.metrics) > 1 and t0 is not None and t1 is not None and t1 > t0:
        for name in _PROGRESS:
            a, b = first.value_sum(name), last.value_sum(name)
            if a is not None and b is not None and b > a:
                yield Clue(key="COUNTER_ROSE", label="progress", time=t1, role=role,
                           host=src.host, text=f"{name} rose {a:g} -> {b:g} in {t1 - t0:.0f} s",
                           source=src.path, wedge=False, strength=2,
                           why="a progress counter moved between samples")
                break


def _mode(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    args = doc.get("server_args") if isinstance(doc.get("server_args"), dict) else doc
    mode = args.get("disaggregation_mode") if isinstance(args, dict) else None
    return mode if mode in ("prefill", "decode") else None


@reader("server_info")
def server_info_clues(src: Source) -> Iterator[Clue]:
    """/server_info answered: the scheduler answered (it asks the scheduler, no timeout)."""
    if src.kind not in ("server_info", "get_server_info") or not isinstance(src.json, dict):
        return
    role = _mode(src.json)
    yield Clue(key="SERVER_INFO_ANSWERED", label="noise", time=src.taken_at, role=role,
               text=f"/server_info answered (version {src.json.get('version', '?')}, "
                    f"disaggregation_mode {role or 'null'})", source=src.path, host=src.host,
               wedge=False, why="sglang /server_info asks the scheduler and waits: an answer "
                                "means the scheduler's loop runs")
