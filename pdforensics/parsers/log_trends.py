"""Queue counts that keep rising across SGLang's periodic batch lines.

``Decode batch, ... #prealloc-req: 12, #transfer-req: 30`` (and the prefill line's
``#bootstrap-req`` / ``#inflight-req``, 0.4.x's ``#unbootstrapped-req`` /
``#transferring-req``) are counts of requests inside the PD handshake. A count that only
goes up until the log ends means requests enter that stage and never leave it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pdforensics import linear

#: A rising run needs this many batch lines of one rank, this many strict rises and this
#: much growth from its first line to its last, and must reach the end of that rank's lines.
MIN_LINES = 4
MIN_RISES = 3
MIN_GROWTH = 3
_FIELD_RE = linear.compile(r"(#[a-z][a-z-]*-req): (\d+)")
_ROLE_RE = linear.compile(r"\b(prefill|decode) batch", linear.I)


@dataclass(frozen=True)
class BatchLine:
    """One batch line: its time (None when unknown), rank (None when unlabelled), text (its
    first SAMPLE_CHARS), and what `batch_line` read of it: its role ("?" when unnamed), the
    counts of the fields a queue signature watches, and whether it counts a running or queued
    request."""

    epoch: float | None
    rank: str | None
    line: str
    role: str = "?"
    counts: tuple[tuple[str, int], ...] = ()
    busy: bool = False  # a #running-req or #queue-req above 0, anywhere on the line


#: what a batch line keeps of its text; its queue counts are read there
SAMPLE_CHARS = 500
_BUSY = ("#running-req", "#queue-req")


def batch_line(epoch: float | None, rank: str | None, line: str) -> BatchLine:
    """The batch line with its role and queue counts read from its first SAMPLE_CHARS
    (``#name: N`` for each watched name, in line order: what ``_FIELD_RE.findall`` filtered
    by name gives), and ``busy`` from the whole line (``#running-req: N`` or ``#queue-req: N``
    with N > 0, of N's first 9 digits). One scan of the line's ``-req: `` fields."""
    sample = line[:SAMPLE_CHARS]
    fields = req_fields(sample)
    busy = counts_busy(fields if len(line) <= SAMPLE_CHARS else req_fields(line))
    watched = queue_field_keys()
    counts = tuple([(name, int(digits)) for name, digits in fields if name in watched])
    if not counts:
        return BatchLine(epoch, rank, sample, busy=busy)
    return BatchLine(epoch, rank, sample, _role(sample), counts, busy)


def counts_busy(fields: Iterable[tuple[str, str]]) -> bool:
    """Whether the fields count a running or queued request: a ``#running-req: N`` or
    ``#queue-req: N`` with N > 0 (of N's first 9 digits)."""
    for name, digits in fields:
        if name in _BUSY and int(digits[:9]) > 0:
            return True
    return False


_DIGITS = frozenset("0123456789")
_DIGIT_CHARS = "0123456789"
_DIGIT_SPAN = 24  # a count's digits are read from a slice this long (longer runs go on by hand)
#: how far before ``-req: `` a field's ``#`` may be (the longest field name SGLang prints,
#: ``#unbootstrapped-req``, starts 15 characters before)
_NAME_SPAN = 40


def req_fields(line: str) -> list[tuple[str, str]]:
    """(name, digits) of each ``#name-req: N`` field of ``line``, in line order: for a name
    without ``#`` or ``-req`` inside (every field SGLang prints), what the pattern
    ``name: (\\d+)`` finds, by str.find (no match object per field)."""
    found = []
    at = line.find("-req: ")
    while at >= 0:
        start = at + 6
        head = line[start:start + _DIGIT_SPAN]
        end = start + len(head) - len(head.lstrip(_DIGIT_CHARS))  # the run of digits, in C
        if end - start == _DIGIT_SPAN:  # (a longer run than the slice: count on)
            size = len(line)
            while end < size and line[end] in _DIGITS:
                end += 1
        if end > start:
            # a field name has no '#' after its first: the nearest one before starts it
            hash_ = line.rfind("#", max(0, at - _NAME_SPAN), at)
            if hash_ >= 0:
                found.append((line[hash_:at + 4], line[start:end]))
        at = line.find("-req: ", end)
    return found


_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _role(line: str) -> str:
    """_ROLE_RE's role ("prefill" / "decode", else "?"): on ASCII text, the first of the two
    words before " batch" (any case) that no word character precedes, found with str.find."""
    if not line.isascii():
        m = _ROLE_RE.search(line)
        return m.group(1).lower() if m else "?"
    low = line.lower()
    best, role = len(low) + 1, "?"
    for word in ("prefill batch", "decode batch"):
        at = low.find(word)
        while at > 0 and low[at - 1] in _WORD:  # \b fails here: a later one may match
            at = low.find(word, at + 1)
        if 0 <= at < best:
            best, role = at, word.split()[0]
    return role


@dataclass(frozen=True)
class Rising:
    """A queue signature: lines in rising runs, their time span, first/last samples, ranks."""

    key: str
    count: int
    first_epoch: float | None
    last_epoch: float | None
    samples: tuple[str, ...]
    ranks: tuple[str, ...]


@lru_cache(maxsize=1)
def queue_field_keys() -> dict[str, str]:
    """Batch-line field -> queue signature key, from the shipped signature table."""
    from pdforensics.catalog.log_table import load_shipped_table

    return {field: row["key"] for row in load_shipped_table().get("queue_signatures", [])
            for field in row["fields"]}


def _final_run(series: list[tuple[int, BatchLine]]) -> list[tuple[int, BatchLine]]:
    """The longest non-decreasing tail of `series`."""
    start = len(series) - 1
    while start > 0 and series[start - 1][0] <= series[start][0]:
        start -= 1
    return series[start:]


def _is_rising(run: list[tuple[int, BatchLine]]) -> bool:
    rises = sum(1 for a, b in zip(run, run[1:], strict=False) if b[0] > a[0])
    return len(run) >= MIN_LINES and rises >= MIN_RISES and run[-1][0] - run[0][0] >= MIN_GROWTH


def rising_queues(lines: Iterable[BatchLine]) -> list[Rising]:
    """One Rising per queue key whose count rises to the end of some rank's batch lines."""
    fields = queue_field_keys()
    series: dict[tuple[str, str, str, str], list[tuple[int, BatchLine]]] = {}
    for bl in lines:
        for name, value in bl.counts:
            series.setdefault((fields[name], name, bl.role, bl.rank or ""), []).append((value, bl))
    runs: dict[str, list[list[tuple[int, BatchLine]]]] = {}
    for (key, _name, _role, _rank), s in series.items():
        run = _final_run(s)
        if _is_rising(run):
            runs.setdefault(key, []).append(run)
    out = []
    for key in sorted(runs):
        found = runs[key]
        longest = max(found, key=len)
        epochs = [bl.epoch for run in found for _v, bl in run if bl.epoch is not None]
        out.append(Rising(
            key, sum(len(r) for r in found), min(epochs) if epochs else None,
            max(epochs) if epochs else None, (longest[0][1].line, longest[-1][1].line),
            tuple(sorted({bl.rank for r in found for _v, bl in r if bl.rank}))))
    return out
