"""The one reader of the times hosts write in their logs.

The zone rule, decided here once: a time that carries its zone (``Z``, ``UTC``, ``+0900``,
``+09:00``: journalctl -o short-iso, dmesg --time-format=iso, ISO 8601) is read in that zone; a
time without one (SGLang's ``[2026-01-29 13:12:37 TP0]`` prefix, Python logging, a docker
compose or kubectl log, dmesg -T) is read as UTC. Always UTC: never in the zone of the machine
that reads the bundle, so the same capture gives the same times on every machine. A host whose
clock runs in another zone writes its zone-less times shifted by its UTC offset, and they read
so (docs/architecture.md, "Log times").
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Sequence
from functools import lru_cache

from pdforensics import linear

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_COMPOSE_RE = linear.compile(r"^[A-Za-z0-9][\w.-]*\s+\| ?")
_ZONE = r"(Z|[+-]\d\d:?\d\d| ?UTC)?"
_ISO = r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?"
_ISO_RE = linear.compile(_ISO + _ZONE)
_STAMP_RE = linear.compile(_ISO + r"\s*" + _ZONE + r"\s*$")
#: SGLang's log prefix: ``[2026-01-29 13:12:37 DP0 TP1]`` (groups 1-7 the time, 8 the ranks)
SGLANG_PREFIX = linear.compile(
    r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?((?: [A-Z]{1,3}\d+)*)\]"
)
_DMESG_T_RE = linear.compile(
    r"^\[(?:[A-Z][a-z]{2}) ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]"
)


#: TensorRT's and TensorRT-LLM's logger: "[06/13/2024-13:01:19] [TRT-LLM] [I] ..."
_TENSORRT_RE = linear.compile(r"^\[(\d\d)/(\d\d)/(\d{4})-(\d\d):(\d\d):(\d\d)\]")


def month(name: str) -> int | None:
    """``Jan`` -> 1."""
    return _MONTHS.get(name.lower())


def epoch(parts: Sequence[str | int | None]) -> float | None:
    """Epoch seconds of (year, month, day, hour, minute, second, fraction, zone); a missing or
    empty zone is UTC. None for fields that are not a date."""
    return _epoch_of(tuple(str(p) if isinstance(p, int) else p for p in (list(parts) + [None] * 8)[:8]))


@lru_cache(maxsize=4096)
def _epoch_of(parts: tuple[str | None, ...]) -> float | None:
    """epoch, memoised: a log's lines share their seconds."""
    y, mo, d, h, mi, s, frac, zone = parts
    try:
        yi, moi, di, hi, mii, si = (int(x or "") for x in (y, mo, d, h, mi, s))
    except ValueError:
        return None
    if not (1 <= moi <= 12 and 1 <= di <= 31 and hi <= 23 and mii <= 59 and si <= 60
            and 1970 <= yi <= 9999):
        return None
    t = float(calendar.timegm((yi, moi, di, hi, mii, si, 0, 0, 0)))
    if frac:
        t += int(frac) / 10 ** len(frac)
    return t - zone_offset_s(zone)


def zone_offset_s(zone: str | None) -> int:
    """Seconds east of UTC of a ``+0900`` / ``-05:00`` suffix; 0 for none, ``Z`` or ``UTC``."""
    z = (zone or "").strip()
    if not z or z[0] not in "+-":
        return 0
    digits = z[1:].replace(":", "")
    return (1 if z[0] == "+" else -1) * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)


def strip_compose_prefix(line: str) -> str:
    """Drop a docker compose ``service-1  | `` prefix when present."""
    m = _COMPOSE_RE.match(line)
    return line[m.end():] if m else line


#: the severity words Google Cloud Logging prints before a line's time
SEVERITIES = frozenset({"DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "WARN", "ERROR",
                         "CRITICAL", "ALERT", "EMERGENCY"})


def parse_log_timestamp(line: str) -> float | None:
    """Epoch of a log line's leading time (SGLang prefix, journal short-iso, ISO, dmesg -T,
    TensorRT's)."""
    first = line[:1]
    if first.isascii() and first.isalnum():  # a compose prefix opens so (an ISO time too)
        line = strip_compose_prefix(line)
        first = line[:1]
        if first.isupper() and (sp := line.find(" ", 4, 10)) > 0 and line[sp + 1:sp + 2].isdigit() \
                and line[:sp] in SEVERITIES:  # Cloud Logging: "ERROR 2026-06-15T14:10:59Z"
            line = line[sp + 1:]
            first = line[:1]
    head = line[:80]
    if first.isascii() and first.isdigit():
        m = _ISO_RE.match(head)
        return epoch(m.groups()) if m else None
    if first != "[":  # every other time opens with a bracket
        return None
    close = head.find("]")
    if close < 0:  # both bracketed forms close within the head
        return None
    key = head[:close + 1]
    known = _BRACKETED.get(key, _UNKNOWN)
    if known is _UNKNOWN:
        known = _bracketed(key)  # neither form holds a "]" before its own: the key decides
        if len(_BRACKETED) >= _BRACKETED_MAX:
            _BRACKETED.clear()
        _BRACKETED[key] = known
    if known is None and line[close + 1:close + 2] == " " and line[close + 2:close + 3].isdigit():
        # a tag before the time: "[Router (Rust)] 2025-03-18 14:17:58 - WARN - ..."
        m = _ISO_RE.match(line[close + 2:close + 82])
        return epoch(m.groups()) if m else None
    return known  # type: ignore[return-value]


#: a bracketed time's epoch by the bracket (``[2026-01-29 13:12:37 TP0]``): a log's lines
#: share their second and rank, and a log is read more than once
_BRACKETED: dict[str, float | None] = {}
_BRACKETED_MAX = 65536
_UNKNOWN = object()


_NINES = str.maketrans("0123456789", "9999999999")
_SGLANG_SHAPE = "[9999-99-99 99:99:99"
#: the rest of an SGLang prefix after its seconds (``.25 DP1 TP3]``): fraction and ranks
_SGLANG_TAIL = linear.compile(r"(?:[.,](\d{1,9}))?((?: [A-Z]{1,3}\d+)*)\]")


@lru_cache(maxsize=4096)
def _day(date: str) -> int | None:
    """Epoch seconds of a ``YYYY-MM-DD`` day at 00:00 UTC, None where _epoch_of refuses it."""
    yi, moi, di = int(date[:4]), int(date[5:7]), int(date[8:10])
    if not (1 <= moi <= 12 and 1 <= di <= 31 and 1970 <= yi <= 9999):
        return None
    return calendar.timegm((yi, moi, di, 0, 0, 0, 0, 0, 0))


@lru_cache(maxsize=4096)
def _tail(tail: str) -> tuple[str | None, str] | None:
    """(fraction digits or None, ranks as ``DP1_TP3`` or "") of a prefix's tail; None when
    it is not one. A log's lines share a few tails."""
    m = _SGLANG_TAIL.fullmatch(tail)
    return None if m is None else (m.group(1), "_".join(m.group(2).split()))


def sglang_prefix(line: str) -> tuple[str | None, str] | None:
    """(fraction digits or None, ranks or "") of the SGLang prefix opening ``line``
    (``[2026-01-29 13:12:37.25 DP1 TP3]``: what SGLANG_PREFIX matches there, read from the
    shape of its time and a cached tail); None when the line does not open with one."""
    if line[:20].translate(_NINES) != _SGLANG_SHAPE:
        return None
    close = line.find("]", 20, 80)
    return None if close < 0 else _tail(line[20:close + 1])


def _sglang_bracket(head: str) -> float | None | bool:
    """epoch(SGLANG_PREFIX.match(head)) where ``head`` is a whole SGLang bracket, computed
    from a cached day; False where it is not one (then the pattern decides)."""
    prefix = sglang_prefix(head)
    if prefix is None:
        return False
    frac = prefix[0]
    day = _day(head[1:11])
    hi, mii, si = int(head[12:14]), int(head[15:17]), int(head[18:20])
    if day is None or hi > 23 or mii > 59 or si > 60:
        return None
    t = float(day + hi * 3600 + mii * 60 + si)
    if frac:
        t += int(frac) / 10 ** len(frac)
    return t


def _bracketed(head: str) -> float | None:
    """The epoch of an SGLang prefix, a dmesg -T or a TensorRT time opening ``head``, else
    None."""
    fast = _sglang_bracket(head)
    if fast is not False:
        return fast
    m = SGLANG_PREFIX.match(head)
    if m:
        return epoch(m.groups()[:7])
    m = _DMESG_T_RE.match(head)
    if m:
        mon = month(m.group(1))
        if mon is None:
            return None
        return epoch((m.group(6), mon, m.group(2), m.group(3), m.group(4), m.group(5)))
    m = _TENSORRT_RE.match(head)  # month first: "[06/13/2024-13:01:19]"
    return epoch((m.group(3), m.group(1), m.group(2), *m.groups()[3:])) if m else None


def read_stamp(stamp: str | None) -> float | None:
    """Epoch of a time on its own (``2026-01-29 13:12:37``, ``...T13:12:37.25Z``, with an
    offset): a log prefix's stamp, a dump's; None when it does not read as one."""
    m = _STAMP_RE.match((stamp or "").strip())
    return epoch(m.groups()) if m else None


def find_stamp(line: str) -> float | None:
    """Epoch of the first ISO-like time anywhere in the line, or None."""
    m = _ISO_RE.search(line)
    return epoch(m.groups()) if m else None


class NewestStamp:
    """The time of the newest stamped line at or before a line of ``lines`` (0-based), asked
    for lines in ascending order: each call walks back only over the lines the last one did
    not see, so a reader that wants a time at a few lines never parses every line's time.
    ``stamp`` reads one line's own time (None when it has none)."""

    def __init__(self, lines: Sequence[str], stamp: Callable[[str], float | None]) -> None:
        self._lines = lines
        self._stamp = stamp
        self._looked = -1
        self.when: float | None = None

    def at(self, i: int) -> float | None:
        for j in range(i, self._looked, -1):
            t = self._stamp(self._lines[j].rstrip("\r"))
            if t is not None:
                self.when = t
                break
        self._looked = i
        return self.when
