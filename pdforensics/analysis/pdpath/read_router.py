"""The gateway's own failures to reach a worker (smg / sglang-router) -> clues.

smg logs "Failed to connect gRPC client for worker grpc://host:port: transport error" when it
cannot open a connection to a worker, and its health checker then logs "Worker ... health
check failed: Connection failed for worker ...". The first is the cause (the worker at that
URL does not answer: the worker's side, which the URL may name, else not established); the
health-check failures that follow are its consequences (the
signature table reads them). An unreachable worker is an error returned, not a hang.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue, Side
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import lines_with
from pdforensics.parsers.logtime import parse_log_timestamp

_CONNECT = linear.compile(r"Failed to connect (?:gRPC client |HTTP client )?(?:for|to) worker "
                          r"([a-z]{2,8}://[^\s:]{1,200}(?::\d{1,5})?)")


@reader("router_workers")
def worker_unreachable(src: Source) -> Iterator[Clue]:
    """One cause per worker URL the gateway could not connect to (its first line)."""
    if "for worker" not in src.text or src.kind in ("metrics", "server_info", "load"):
        return
    seen: set[str] = set()
    for no, line in lines_with(src.text, ("Failed to connect",)):
        m = _CONNECT.search(line)
        if m is None or m.group(1) in seen:
            continue
        seen.add(m.group(1))
        url = m.group(1).lower()
        side: Side = next((r for r in ("prefill", "decode") if r in url), "not_established")
        yield Clue(key="ROUTER_WORKER_UNREACHABLE", label="cause", text=line.strip()[:500],
                   source=src.path, line=no, time=parse_log_timestamp(line), role="router",
                   host=src.host, side=side, suspect=m.group(1), wedge=False, strength=2,
                   why="smg could not open a connection to this worker: it is down, not yet "
                       "listening, or unreachable from the router")
