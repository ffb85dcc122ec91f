"""Stand-in of sglang.srt.utils.common."""

from __future__ import annotations

from pdfx_lab_runtime import sleep_until_fault_changes


def broadcast_pyobj(fault: str, seconds: float) -> list:
    """Rank 0 broadcasts the received requests to its peers (a gloo broadcast, blocking)."""
    sleep_until_fault_changes(fault, seconds)
    return []
