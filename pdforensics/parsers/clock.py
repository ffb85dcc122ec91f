"""`date +%s.%N`: the host's clock, read to measure its offset from ours."""

from __future__ import annotations

from pdforensics import linear
from pdforensics.errors import ParseError

_EPOCH = linear.compile(r"^\d{1,12}(?:\.\d{1,9})?$")


def parse_epoch(text: str) -> float | None:
    """Epoch seconds the host printed; None for empty output."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    if len(lines) != 1 or not _EPOCH.match(lines[0]):
        raise ParseError("not `date +%s.%N` output", line=lines[0][:200], lineno=1)
    return float(lines[0])
