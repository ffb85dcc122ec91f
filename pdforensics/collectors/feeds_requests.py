"""The log feed with request-level lines: one log read fills both the signature hits and the
request events (``ServiceView.requests``), so request tracking costs no extra command."""

from __future__ import annotations

from typing import Any

from pdforensics.collectors.feeds import Reading, log_hits
from pdforensics.parsers.requests import parse_request_lines


def log_hits_and_requests(acc: dict[str, Any], field: str, r: Reading) -> None:
    """log_hits, then the request lines of the same (first) log read."""
    first = "log_source" not in acc and bool(r.entry.path)
    log_hits(acc, field, r)
    if first and acc.get("log_entry") is r.entry:
        acc["requests"] = parse_request_lines(r.text())
