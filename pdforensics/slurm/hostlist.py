"""Expand Slurm host lists: `node[01-03,07]`, `gpu[1-2]-ib[0-1]`, `a1,b[2-3]`."""

from __future__ import annotations

from pdforensics import linear
from pdforensics.errors import ParseError

#: more names than this from one list is not a real allocation: refuse instead of looping
MAX_HOSTS = 65_536
_RANGE = linear.compile(r"^(\d+)(?:-(\d+))?$")


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Every host name a Slurm host list names, in order, without duplicates.
    Empty text and Slurm's `(null)` give (); malformed text raises ParseError."""
    text = text.strip()
    if not text or text == "(null)":
        return ()
    out: dict[str, None] = {}
    for part in _split_top(text):
        for name in _expand_one(part, text):
            out[name] = None
            if len(out) > MAX_HOSTS:
                raise ParseError(f"host list names more than {MAX_HOSTS} hosts", line=text)
    return tuple(out)


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ParseError("unbalanced ']' in host list", line=text)
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ParseError("unbalanced '[' in host list", line=text)
    parts.append("".join(cur))
    if any(not p for p in parts):
        raise ParseError("empty name in host list", line=text)
    return parts


def _expand_one(part: str, whole: str) -> list[str]:
    """One comma-free element, possibly with several bracket groups (a cartesian product)."""
    names = [""]
    pos = 0
    while pos < len(part):
        open_at = part.find("[", pos)
        if open_at < 0:
            names = [n + part[pos:] for n in names]
            break
        close_at = part.index("]", open_at)
        prefix = part[pos:open_at]
        numbers = _numbers(part[open_at + 1:close_at], whole)
        if len(names) * len(numbers) > MAX_HOSTS:
            raise ParseError(f"host list names more than {MAX_HOSTS} hosts", line=whole)
        names = [n + prefix + s for n in names for s in numbers]
        pos = close_at + 1
    for name in names:
        if not name or any(c.isspace() or c in "[]" for c in name):
            raise ParseError("bad host name in host list", line=whole)
    return names


def _numbers(inner: str, whole: str) -> list[str]:
    """`01-03,07` -> ['01', '02', '03', '07'], keeping the zero padding of the low end."""
    out: list[str] = []
    for rng in inner.split(","):
        m = _RANGE.match(rng.strip())
        if m is None:
            raise ParseError(f"bad range {rng!r} in host list", line=whole)
        lo_text, hi_text = m.group(1), m.group(2) or m.group(1)
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo or hi - lo > MAX_HOSTS:
            raise ParseError(f"bad range {rng!r} in host list", line=whole)
        width = len(lo_text) if lo_text.startswith("0") else 0
        out += [str(i).zfill(width) for i in range(lo, hi + 1)]
    return out
