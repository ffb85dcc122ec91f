"""The faults the lab can simulate."""

from __future__ import annotations

FAULTS: tuple[str, ...] = (
    "healthy",
    "transfer-stuck",
    "kv-full",
    "forgotten-requests",
    "rank-stuck",
    "hung-endpoint",
    "process-dead",
    "busy",
    "breaker-open",
)
