"""The gateway's own log (file or journald), read for its circuit-breaker transitions and
per-worker failures (its /workers, /get_loads and metrics are in collectors/http.py)."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, Runs, Target
from pdforensics.collectors.feeds import Feed, first_ok
from pdforensics.collectors.logs import journal_source, log_file_source, no_log_file
from pdforensics.model import HostSpec
from pdforensics.sglang.discovery import Discovery

ROUTER_LOG_BYTES = 4 * MIB


def _router_journal(host: HostSpec, d: Discovery, t: Target) -> bool:
    return t.service is not None and t.service.kind == "router" and no_log_file(host, d, t)


ROUTER_LOG = log_file_source("router_log", "router log file tail: breaker transitions, worker errors",
                             ROUTER_LOG_BYTES, "router_log:parse_router_log", "smg_router_log.txt",
                             Feed("service.router_log", first_ok), runs=Runs.PER_ROUTER)

ROUTER_JOURNAL = journal_source("router_journal", "router journald lines: breaker transitions, worker errors",
                                50000, ROUTER_LOG_BYTES, "router_log:parse_router_log", "smg_router_log.txt",
                                Feed("service.router_log", first_ok), only=_router_journal)
