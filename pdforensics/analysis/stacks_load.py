"""Read stack files of any supported format, bare or wrapped in any log (sniffed from the content)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.errors import ParseError, PdforensicsError
from pdforensics.parsers.cuda_gdb import cuda_dump, looks_like_cuda_gdb
from pdforensics.parsers.faulthandler import parse_faulthandler
from pdforensics.parsers.frames import ProcessDump, ThreadStack
from pdforensics.parsers.goroutines import dump_indent, parse_goroutines
from pdforensics.parsers.linescan import has_any, marks
from pdforensics.parsers.logprefix import unwrap_log
from pdforensics.parsers.native_stacks import (
    looks_like_gdb,
    looks_like_ucx_backtrace,
    parse_gdb,
    parse_ucx_backtrace,
)
from pdforensics.parsers.pastes import unwrap_paste
from pdforensics.parsers.pyspy import extract_watchdog_dumps, parse_pyspy_json, parse_pyspy_text
from pdforensics.parsers.pyspy_errors import classify_pyspy_error, failure_lines
from pdforensics.parsers.pystack import parse_pystack
from pdforensics.parsers.stackscan import INTERLEAVED_LINES, interleaved_lines, scan_text
from pdforensics.parsers.tracebacks import parse_tracebacks

# No leading ^: a literal prefix lets re skip ahead fast; _at_line_start checks the rest.
_GO = linear.compile(r"goroutine (?:\d+ .*\]:|profile: total \d+)\s*$", linear.M)
# (an empty state: a pasted frame list given a thread line, parsers/pastes.py)
_PYSPY = linear.compile(r"^(?:Process \d+: |Thread (?:(?:0[xX][0-9A-Fa-f]+|\d+) )?"
                        r"\((?:(?:active|idle|gil)[^)\n]{0,40})?\))",
                        linear.M)
_FAULT = linear.compile(r"\(most recent call first\):\s*$", linear.M)
_WATCHDOG = linear.compile(r"Pyspy (?:dump for|failed to dump) PID \d+|Pyspy failed \(")
_PYSTACK = linear.compile(r"Traceback for thread \d+")
_TRACEBACK = linear.compile(r"Traceback \(most recent call last\):|File \"[^\"]*\", line \d+, in |"
                        r"~ Stack of .* \(\d+\) ~")
_GO_FILE = linear.compile(r"^(?:\t| {2,})[^\s()]+\.(?:go|s):\d+", linear.M)
_GO_GROUP = linear.compile(r"^\d+ @ 0x[0-9a-fA-F]+(?: 0x[0-9a-fA-F]+)*\s*\n#\t0x", linear.M)  # debug=1

STDIN = "-"

# a literal each pattern above cannot match without: a large text holding none of them is not
# searched with the pattern (every registered mark is found in one pass: parsers/linescan.py)
_WATCHDOG_MARKS = marks("Pyspy ")
_GO_MARKS = marks("goroutine ", ".go:", ".s:", " @ 0x")
_PYSTACK_MARKS = marks("Traceback for thread ")
_FAULT_MARKS = marks("(most recent call first):")
_PYSPY_MARKS = marks("Process ", "Thread ")
_PYBT_MARKS = marks("Traceback (most recent call first):")
_PYBT = linear.compile(r"^(?:\(gdb\) )?Traceback \(most recent call first\):\s*$", linear.M)
_TRACEBACK_MARKS = marks("Traceback (most recent call last):", 'File "', "~ Stack of ")


def _at_line_start(pattern: linear.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` matches somewhere at the start of a line."""
    return any(m.start() == 0 or text[m.start() - 1] == "\n" for m in pattern.finditer(text))


def sniff_format(text: str) -> str | None:
    """pyspy-json | watchdog | gdb | ucx | cuda-gdb | goroutines | faulthandler | pystack |
    traceback | pyspy | None. gdb's ``Thread 4 (Thread 0x7f.. (LWP 1) "x"):`` is gdb's, never a
    py-spy thread line."""
    head = text.lstrip()[:1]
    if head == "[" and text.lstrip().startswith(("[\n", "[{", "[ ", "[]")):
        return "pyspy-json"
    if has_any(text, _WATCHDOG_MARKS) and _WATCHDOG.search(text):
        return "watchdog"
    if looks_like_gdb(text):
        return "gdb"
    if looks_like_ucx_backtrace(text):
        return "ucx"
    if looks_like_cuda_gdb(text) and cuda_dump(text):
        return "cuda-gdb"
    if has_any(text, _GO_MARKS) and (_at_line_start(_GO, text) or _GO_FILE.search(text)
                                      or _GO_GROUP.search(text) or dump_indent(text)):
        return "goroutines"
    if has_any(text, _PYSTACK_MARKS) and _PYSTACK.search(text):
        return "pystack"
    if has_any(text, _PYBT_MARKS) and _PYBT.search(text):
        return "traceback"  # gdb's py-bt: a traceback, innermost first (not faulthandler's)
    if has_any(text, _FAULT_MARKS) and _FAULT.search(text):
        return "faulthandler"
    if (has_any(text, _PYSPY_MARKS) and _PYSPY.search(text)) or (
            failure_lines(text) and classify_pyspy_error(text, None)):
        return "pyspy"
    if has_any(text, _TRACEBACK_MARKS) and _TRACEBACK.search(text):
        return "traceback"
    if bare_pyspy_frames(text):
        return "pyspy"
    if bare_faulthandler_frames(text):
        return "faulthandler"
    return None


#: a py-spy frame line: "    fetch_registered_method (ray/_private/function_manager.py:248)"
_PYSPY_FRAME = linear.compile(r"^\s{2,12}[\w.<>-]{1,200} \([^()\n]{1,400}\.py:\d{1,7}\)\s*$")


def bare_pyspy_frames(text: str) -> bool:
    """A stack copied without its ``Thread``/``Process`` header (Ray's dashboard "Stack Trace",
    a paste that starts mid-dump): its first lines are all py-spy frame lines, three or more."""
    lines = [ln for ln in text[:20000].split("\n", 40)[:40] if ln.strip()]
    head = lines[:12]
    return len(head) >= 3 and all(_PYSPY_FRAME.match(ln) is not None for ln in head[:3]) and \
        sum(1 for ln in head if _PYSPY_FRAME.match(ln) is not None) * 4 >= len(head) * 3


#: faulthandler's frame line: '  File "x.py", line 12 in f' (a traceback's has ", in")
_FAULT_FRAME = linear.compile(r'^\s{0,12}File "[^"\n]{1,400}", line (?:\d{1,7}|\?\?\?) in \S{1,200}\s*$')


def bare_faulthandler_frames(text: str) -> bool:
    """A faulthandler dump pasted without its ``Thread 0x...`` header: its first three lines
    are faulthandler frame lines, and three in four of its first twelve."""
    lines = [ln for ln in text[:20000].split("\n", 40)[:40] if ln.strip()]
    head = lines[:12]
    return len(head) >= 3 and all(_FAULT_FRAME.match(ln) is not None for ln in head[:3]) and \
        sum(1 for ln in head if _FAULT_FRAME.match(ln) is not None) * 4 >= len(head) * 3


def parse_stack_text(text: str, fmt: str | None = None) -> tuple[ProcessDump, ...]:
    """Parse text in the given format, or find every dump in it (any format, any log prefix)."""
    mixed = interleaved_lines(text[:2_000_000])
    if mixed >= INTERLEAVED_LINES:
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        raise ParseError(f"two or more dumps are interleaved within lines ({mixed} lines mix "
                         "them: they were written to one terminal at once), so their threads "
                         "cannot be told apart; capture each process to its own file", first, 1)
    if fmt is not None:
        try:
            return _parse_as(text, fmt)
        except ParseError:  # not bare: a paste with Markdown or log prefixes around it
            found = scan_text(text)
            if found.dumps:
                return found.dumps
            raise
    if sniff_format(text) is None and sniff_format(_unprefixed(text)) is None:
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("unrecognised stack dump format", first, 1)
    fast = _FAST.get(sniff_format(text) or "")
    if fast is not None:  # a bare dump (the common case, and 10x faster than scanning a log)
        try:
            return fast(text)
        except ParseError:
            pass
    found = scan_text(text)
    if not found.dumps and found.problems:
        raise ParseError(found.problems[0])
    return found.dumps


def _goroutine_dump(text: str) -> tuple[ProcessDump, ...]:
    gs = parse_goroutines(text)
    return (ProcessDump("goroutines", gs),) if gs else ()


_FAST = {"pyspy-json": parse_pyspy_json, "pyspy": parse_pyspy_text, "goroutines": _goroutine_dump,
         "gdb": parse_gdb, "ucx": parse_ucx_backtrace, "cuda-gdb": cuda_dump}


def _unprefixed(text: str) -> str:
    """The text with every line's log prefixes removed (streams concatenated)."""
    return "\n".join(ll.text for lines in unwrap_log(text).values() for ll in lines)


def _parse_as(text: str, fmt: str) -> tuple[ProcessDump, ...]:
    if fmt == "pyspy-json":
        return parse_pyspy_json(text)
    if fmt == "watchdog":
        return extract_watchdog_dumps(text)
    if fmt == "goroutines":
        return _goroutine_dump(text)
    single = {"faulthandler": parse_faulthandler, "pystack": parse_pystack,
              "traceback": parse_tracebacks}.get(fmt)
    if single is not None:
        d = single(text)
        return (d,) if d is not None else ()
    if fmt == "pyspy":
        return parse_pyspy_text(text)
    if fmt in ("gdb", "ucx", "cuda-gdb"):
        return _FAST[fmt](text)
    raise ParseError(f"unknown stack format {fmt!r}")


def _read(path: str) -> str:
    if path == STDIN:
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError as exc:
        raise PdforensicsError(f"cannot read {path}: {exc.strerror or exc}") from None


def load_stack_file(path: str, host: str = "") -> tuple[LabelledDump, ...]:
    """Read and parse one file (``-``: stdin); its name is each dump's source.

    Raises ParseError naming the file when it holds no dump at all.
    """
    text = unwrap_paste(_read(path))  # (quoted in Markdown, or with an editor's line numbers)
    name = "<stdin>" if path == STDIN else os.path.basename(path)
    if not text.strip():
        raise ParseError(f"{name}: empty file, no stack dump in it")
    try:
        dumps = parse_stack_text(text)
    except ParseError as exc:
        raise ParseError(f"{name}: {exc}") from None
    if not dumps:
        raise ParseError(f"{name}: no stack dump found")
    if not any(d.threads or d.error is not None for d in dumps):
        raise ParseError(f"{name}: no thread in it (only process headers)")
    source = "<stdin>" if path == STDIN else path
    return tuple(LabelledDump(d, host=host, rank=d.rank, source=source) for d in dumps)


def load_stack_files(paths: Sequence[str], host: str = "") -> tuple[LabelledDump, ...]:
    """Read and parse each file; the first unreadable one raises."""
    out: list[LabelledDump] = []
    for path in paths:
        out.extend(load_stack_file(path, host))
    return tuple(out)


@dataclass(frozen=True)
class LoadResult:
    """Dumps from the files that parsed, and ``(path, reason)`` for each file skipped."""

    dumps: tuple[LabelledDump, ...]
    skipped: tuple[tuple[str, str], ...]


def load_stack_files_lenient(paths: Sequence[str], host: str = "") -> LoadResult:
    """Like ``load_stack_files``, but a file that cannot be read or holds no dump is skipped."""
    out: list[LabelledDump] = []
    skipped: list[tuple[str, str]] = []
    for path in paths:
        try:
            out.extend(load_stack_file(path, host))
        except PdforensicsError as exc:
            skipped.append((path, str(exc)))
    return LoadResult(tuple(out), tuple(skipped))


def read_goroutines(text: str) -> tuple[ThreadStack, ...]:
    """Goroutines of a Go dump, bare or inside any log (kubectl, compose, journald)."""
    try:
        return parse_goroutines(text)
    except ParseError as exc:
        found = tuple(t for d in scan_text(text).dumps if d.kind == "goroutines" for t in d.threads)
        if not found:
            raise exc from None
        return found
