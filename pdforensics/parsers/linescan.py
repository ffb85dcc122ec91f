"""The lines of a large text that hold one of a few marks, found by one scan of the whole text.

A reader that wants a handful of lines out of a 100 MB log (the NCCL watchdog's records, the
transfer engine's errors, a prompt) would otherwise walk every line in Python (a few hundred
nanoseconds each, times a million lines, times each reader). Here RE2 runs over the text's
UTF-8 bytes once per question (an alternation of the marks, as literals) and only the lines
it stops on come back to Python: the same lines, with the same numbers, as
``enumerate(text.split("\\n"), 1)`` filtered by ``any(mark in line ...)``.

``ignore_case``: the marks are found in ``line.lower()``. The scan folds ASCII letters; the two
letters whose lower case is ASCII (U+0130, U+212A: ``İ`` and the Kelvin sign) send a text
that holds them to the loop, so the answer is the same (and so does a non-ASCII mark: RE2 folds
bytes as Latin-1 letters).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

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


_SPLIT: tuple[str, tuple[str, ...]] = ("", ("",))


def split_lines(text: str) -> tuple[str, ...]:
    """``text.split("\\n")`` as a tuple; the last large text's lines are kept, so the dozen
    readers that index one log's lines split it once (0.2 s each on 100 MB)."""
    global _SPLIT
    last = _SPLIT
    if last[0] is text:
        return last[1]
    lines = tuple(text.split("\n"))
    if len(text) >= SMALL:
        _SPLIT = (text, lines)
    return lines


#: marks registered by the readers (`marks`): a large text is searched for all of them at once
_MARKS: dict[str, None] = {}
_SET: tuple[int, Any] = (0, None)  # (how many marks it holds, the RE2 set)
_PRESENT: tuple[str, int, frozenset[str]] = ("", 0, frozenset())


def marks(*wanted: str) -> tuple[str, ...]:
    """Register literal marks a reader asks `has_any` about (at import): a large text is then
    searched for every registered mark in one pass, not once per mark."""
    for m in wanted:
        _MARKS.setdefault(m, None)
    return wanted


def _present(text: str) -> frozenset[str]:
    """The registered marks that ``text`` holds (one RE2 set pass over its bytes, kept for
    the last text asked about). Each cache is read once: readers run in capture threads."""
    global _SET, _PRESENT
    known = len(_MARKS)
    last = _PRESENT
    if last[0] is text and last[1] == known:
        return last[2]
    names = list(_MARKS)[:known]
    built = _SET
    if built[0] != known:
        built = _SET = (known, linear.LiteralSet([m.encode("utf-8", "surrogatepass")
                                                  for m in names]))
    found = frozenset(names[i] for i in built[1].matching(encoded(text)))
    _PRESENT = (text, known, found)
    return found


def has_any(text: str, wanted: Iterable[str]) -> bool:
    """Whether ``text`` contains one of ``wanted``. On a large text, marks registered with
    `marks` are looked up in one search of its UTF-8 bytes for every registered mark (a
    substring of the text is one of its bytes and back: UTF-8 never starts a character inside
    another); any other mark is searched for alone."""
    if len(text) < SMALL:
        return any(m in text for m in wanted)
    wanted = tuple(wanted)
    if all(m in _MARKS for m in wanted):
        present = _present(text)
        return any(m in present for m in wanted)
    return any(m in text for m in wanted)


def _scanner(marks: tuple[str, ...], ignore_case: bool) -> linear.Pattern[bytes]:
    alternation = b"|".join(linear.escape(m.encode("utf-8", "surrogatepass")) for m in marks)
    return linear.compile(alternation, linear.I if ignore_case else 0)


def _whole_text_scan(text: str, wanted: tuple[str, ...], ignore_case: bool) -> bool:
    """Whether the RE2 scan answers as the loop would (else the loop is cheaper or exact)."""
    return len(text) >= SMALL and not any("\n" in m for m in wanted) and not (
        ignore_case and (not all(m.isascii() for m in wanted)
                         or any(c in text for c in FOLDS_TO_ASCII)))


def _lines(text: str, marks: Iterable[str], ignore_case: bool, with_text: bool = True
           ) -> Iterator[tuple[int, str]]:
    wanted = tuple(m for m in dict.fromkeys(marks) if m)
    if not wanted or not text:
        return
    if not _whole_text_scan(text, wanted, ignore_case):
        yield from _loop(text, wanted, ignore_case)
        return
    data = encoded(text)
    ascii_text = len(data) == len(text)
    no, counted = 1, 0
    for start, end in linear.matching_lines(_scanner(wanted, ignore_case), data):
        no += data.count(b"\n", counted, start)
        counted = start
        yield no, ("" if not with_text else text[start:end] if ascii_text
                   else data[start:end].decode("utf-8", "surrogatepass"))


def lines_with(text: str, marks: Iterable[str], ignore_case: bool = False
               ) -> list[tuple[int, str]]:
    """(1-based number, line) of every line of ``text`` (split on ``\\n``, ``\\r`` kept) that
    contains one of ``marks``, in order."""
    return list(_lines(text, marks, ignore_case))


def first_lines_with(text: str, marks: Iterable[str], limit: int) -> list[tuple[int, str]]:
    """The first ``limit`` of `lines_with`'s lines, found without looking past them."""
    return list(itertools.islice(_lines(text, marks, False), limit))


def numbers_with(text: str, marks: Iterable[str], ignore_case: bool = False) -> list[int]:
    """The numbers of `lines_with`'s lines (no line's text taken)."""
    return [no for no, _ in _lines(text, marks, ignore_case, with_text=False)]


def first_line_with(text: str, marks: Iterable[str], ignore_case: bool = False
                    ) -> tuple[int, str] | None:
    """The first of `lines_with`'s lines, found without looking past it."""
    return next(_lines(text, marks, ignore_case), None)


def _loop(text: str, wanted: tuple[str, ...], ignore_case: bool) -> list[tuple[int, str]]:
    """lines_with as a walk over every line (small texts, and the reference of the tests)."""
    if ignore_case:
        folded = tuple(m.lower() for m in wanted)
        return [(no, line) for no, line in enumerate(text.split("\n"), 1)
                if any(m in line.lower() for m in folded)]
    return [(no, line) for no, line in enumerate(text.split("\n"), 1)
            if any(m in line for m in wanted)]


#: the letters whose lower case holds an ASCII letter (every other one folds outside ASCII)
FOLDS_TO_ASCII = ("\u0130", "\u212a")


def first_line_matching(text: str, pattern: linear.Pattern[bytes]) -> tuple[int, str] | None:
    """(1-based number, line) of the first line of ``text`` holding a match of the bytes
    ``pattern``, found by one scan that stops there; None when no line does."""
    data = encoded(text)
    for start, end in linear.matching_lines(pattern, data):
        return (data.count(b"\n", 0, start) + 1,
                data[start:end].decode("utf-8", "surrogatepass"))
    return None


def strip_line_prefix(text: str, scan: linear.Pattern[bytes], prefix: linear.Pattern[str]
                      ) -> tuple[list[str], list[tuple[int, str]]]:
    """The lines of ``text`` with ``prefix`` removed from each line it opens (found by one
    scan of the bytes pattern ``scan``, its multiline twin), and (1-based number, the prefix's
    first group: the writer it names) of each such line; ``([], [])`` when no line has it. A
    paste's per-line prefix (Ray's worker, grep's file name) goes; the line numbers stay."""
    numbers = line_numbers(text, scan)
    if not numbers:
        return [], []
    lines = text.split("\n")
    found: list[tuple[int, str]] = []
    for no in numbers:
        m = prefix.match(lines[no - 1])
        if m is not None:
            lines[no - 1] = lines[no - 1][m.end():]
            found.append((no, m.group(1)))
    return lines, found


def line_numbers(text: str, pattern: linear.Pattern[bytes]) -> list[int]:
    """The 1-based numbers of the lines of ``text`` (split on ``\\n``) holding a match of the
    bytes ``pattern`` (one scan of the text's UTF-8)."""
    data = encoded(text)
    out: list[int] = []
    no, counted = 1, 0
    for start, _end in linear.matching_lines(pattern, data):
        no += data.count(b"\n", counted, start)
        counted = start
        out.append(no)
    return out


_BREAKS: tuple[str, bool] = ("", True)
#: what str.splitlines breaks a line at besides \\n, as UTF-8: \\r, \\v, \\f, \\x1c-\\x1e,
#: U+0085, U+2028, U+2029
_OTHER_BREAK = linear.compile(rb"[\r\x0b\x0c\x1c\x1d\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]")


def only_newlines(text: str) -> bool:
    """Whether ``text`` breaks its lines at ``\\n`` alone (no ``\\r``, no other break
    ``str.splitlines`` honours): its splitlines() are then its split("\\n") (less a last
    empty one), so a reader numbering lines by splitlines may use `lines_with`. One search
    of its bytes; the answer for the last large text is kept."""
    global _BREAKS
    last = _BREAKS
    if last[0] is text:
        return last[1]
    answer = _OTHER_BREAK.search(encoded(text)) is None
    if len(text) >= SMALL:
        _BREAKS = (text, answer)
    return answer
