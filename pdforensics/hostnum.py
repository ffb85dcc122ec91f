"""Numbers read from host text, with a bounded length.

`int()` of a 5000-digit string raises ValueError (Python's 4300-digit limit) and one of a few
hundred thousand digits takes seconds; `json.dumps` of such an int raises too. A pid, a line
number, a count of minutes, a bootstrap room or a GPU field never needs more than 20 digits, so a longer one is
read as None (no number) instead: the record keeps its text, nothing crashes (issue 32).
"""

from __future__ import annotations

MAX_DIGITS = 20  # a uint64 (bootstrap rooms are 19-20 digits): every JSON reader keeps it


def to_int(text: str, base: int = 10) -> int | None:
    """The integer `text` spells (an optional sign, `0x` for base 16), or None when it is not
    one or has more than MAX_DIGITS significant digits."""
    s = text.strip()
    body = s.lstrip("+-")
    if base == 16 and body[:2].lower() == "0x":
        body = body[2:]
    if not body or len(body) > 64 or len(body.lstrip("0")) > MAX_DIGITS:
        return None
    try:
        return int(s, base)
    except ValueError:
        return None


def bounded(value: int) -> int | None:
    """value when it fits MAX_DIGITS, else None (for ints made by arithmetic on host numbers)."""
    return value if -(10**MAX_DIGITS) < value < 10**MAX_DIGITS else None
