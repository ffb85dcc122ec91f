"""The gateway's own log (file or journald), read for its circuit-breaker transitions and
per-worker failures (its /workers, /get_loads and metrics are in collectors/http.py)."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, NORMAL, Source, register
from pdforensics.collectors.feeds import Feed, first_ok
from pdforensics.collectors.logs import log_file_of, unit_of

ROUTER_LOG_BYTES = 4 * MIB


ROUTER_LOG = register(Source(
    name="router_log", description="router log file tail: breaker transitions, worker errors",
    scope="endpoint", build=lambda host, t: ("tail", "-c", str(ROUTER_LOG_BYTES), "--", log_file_of(t)),
    reads=lambda host, t: log_file_of(t), tail=True,
    timeout_s=10, max_bytes=ROUTER_LOG_BYTES, priority=NORMAL, parser="router_log:parse_router_log",
    sample="smg_router_log.txt", privileged=True, feeds=Feed("service.router_log", first_ok),
))

ROUTER_JOURNAL = register(Source(
    name="router_journal", description="router journald lines: breaker transitions, worker errors",
    scope="unit",
    build=lambda host, t: ("journalctl", f"--unit={unit_of(t)}", "--since=-6h", "--no-pager",
                           "-o", "short-iso", "-n", "50000"),
    timeout_s=10, max_bytes=ROUTER_LOG_BYTES, priority=NORMAL, parser="router_log:parse_router_log",
    sample="smg_router_log.txt", privileged=True, feeds=Feed("service.router_log", first_ok),
))
