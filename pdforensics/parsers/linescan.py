"""The lines of a large text that hold one of a few marks, found by one scan of the whole text.

A reader that wants a handful of lines out of a 100 MB log (the NCCL watchdog's records, the
transfer engine's errors, a prompt) would otherwise walk every line in Python (a few hundred
nanoseconds each, times a million lines, times each reader). Here RE2 runs over the text's
UTF-8 bytes once per question (an alternation of the marks, as literals) and only the lines
it stops on come back to Python: the same lines, with the same numbers, as
``enumerate(text.split("\\n"), 1)`` filtered by ``any(mark in line ...)``.

``ignore_case`` folds ASCII letters only (the marks are ASCII); a line whose only match needs a
non-ASCII letter folded (KELVIN SIGN for ``k``) is not found, where ``line.lower()`` would.
"""

from __future__ import annotations

from collections.abc import Iterable

from pdforensics import linear

#: below this many characters the plain loop over the lines is cheaper than the scan
SMALL = 65536

_LAST: tuple[str, bytes] = ("", b"")


def encoded(text: str) -> bytes:
    """``text`` as UTF-8 (lone surrogates kept as their 3 bytes); the last large one is kept,
    so the readers asking in turn about one log encode it once."""
    global _LAST
    last = _LAST
    if last[0] is text:
        return last[1]
    data = text.encode("utf-8", "surrogatepass")
    if len(text) >= SMALL:
        _LAST = (text, data)
    return data


def _scanner(marks: tuple[str, ...], ignore_case: bool) -> linear.Pattern[bytes]:
    alternation = b"|".join(linear.escape(m.encode("utf-8", "surrogatepass")) for m in marks)
    return linear.compile(b"^.*(?:" + alternation + b").*$",
                          linear.M | (linear.I if ignore_case else 0))


def lines_with(text: str, marks: Iterable[str], ignore_case: bool = False
               ) -> list[tuple[int, str]]:
    """(1-based number, line) of every line of ``text`` (split on ``\\n``, ``\\r`` kept) that
    contains one of ``marks``, in order."""
    wanted = tuple(m for m in dict.fromkeys(marks) if m)
    if not wanted or not text:
        return []
    if len(text) < SMALL or any("\n" in m for m in wanted):
        return _loop(text, wanted, ignore_case)
    data = encoded(text)
    ascii_text = len(data) == len(text)
    pattern = _scanner(wanted, ignore_case)
    out: list[tuple[int, str]] = []
    no, counted = 1, 0
    for m in pattern.finditer(data):
        start, end = m.span()
        no += data.count(b"\n", counted, start)
        counted = start
        line = text[start:end] if ascii_text else data[start:end].decode("utf-8", "surrogatepass")
        out.append((no, line))
    return out


def _loop(text: str, wanted: tuple[str, ...], ignore_case: bool) -> list[tuple[int, str]]:
    if ignore_case:
        folded = tuple(m.lower() for m in wanted)
        return [(no, line) for no, line in enumerate(text.split("\n"), 1)
                if any(m in _ascii_lower(line) for m in folded)]
    return [(no, line) for no, line in enumerate(text.split("\n"), 1)
            if any(m in line for m in wanted)]


_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_FOLD = str.maketrans(_UPPER, _UPPER.lower())


def _ascii_lower(line: str) -> str:
    return line.translate(_FOLD) if not line.isascii() else line.lower()
