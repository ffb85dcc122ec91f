"""Error lines no other reader knows: a line its own logger marks as an error (``ERROR``,
``FATAL``, ``CRITICAL``, ``level=error``) is evidence of a failure
even when its words are nobody's catalogued message (LMCache's, a launcher's, a plugin's).

Each is a weak cause (strength 1): any catalogued message outranks it, and a burst of them
reads as one failure (join.py: the first line the cause, the later ones its consequences).
A line another reader already placed keeps that reading only (diagnose.read_all).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.place import side_of_words
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import (
    first_lines_with,
    has_any,
    line_numbers,
    lines_with,
    marks,
    split_lines,
)
from pdforensics.parsers.logtime import parse_log_timestamp
from pdforensics.parsers.transfer_engine import BENIGN_ERRORS, mooncake_glog

#: a level word as loggers print it (upper case, a separator after it), logfmt's level, glog's
#: error/fatal prefix
_LEVEL = linear.compile(r"(?:^|[\s\[|(\]:])(?:ERROR|FATAL|CRITICAL)(?:$|[\s\]|:)])|"
                        r"\blevel=(?:error|fatal)\b")
_WORDS = ("ERROR", "FATAL", "CRITICAL", "level=error", "level=fatal")
_MARKS = marks(*_WORDS)
_MAX_LINES = 400  # per source: a log that errs on every line says so in its first ones
_MAX_TEXT = 500
#: glog's error and fatal lines: "E20260528 17:58:58.306107  2881 etcd_helper.cpp:135] ..."
#: (the year since glog 0.7), "F0312 10:00:00.123 42 x.cc:9] Check failed"
_GLOG = linear.compile(rb"^[EF](?:\d{4})?\d{4} \d\d:\d\d:\d\d(?:\.\d{1,9})? {1,8}\d{1,10} "
                       rb"[^\s\]]{1,200}:\d{1,7}\] ", linear.M)


#: a line that opens with glog's E or F and a month (or a year) holds one of these
_GLOG_MARKS = marks("\nE0", "\nE1", "\nE2", "\nF0", "\nF1", "\nF2")


@reader("error_lines")
def error_lines(src: Source) -> Iterator[Clue]:
    """Lines marked as errors by their logger (weak causes; see the module docstring)."""
    if not src.text or src.kind in ("metrics", "server_info", "load", "stacks", "goroutines"):
        return
    leveled = has_any(src.text, _MARKS)
    glog = line_numbers(src.text, _GLOG) if (has_any(src.text, _GLOG_MARKS) or src.text[:1]
                                              in ("E", "F")) else []
    if not leveled and not glog:
        return
    every = split_lines(src.text) if glog else ()
    found = sorted({*((no, line) for no, line in lines_with(src.text, _WORDS)
                      if _LEVEL.search(line[:300]) is not None),
                    *((no, every[no - 1]) for no in glog)})
    for n, (no, line) in enumerate(found, 1):
        if n > _MAX_LINES:
            return
        if "NVRM" in line or any(b in line for b in BENIGN_ERRORS):
            continue  # (the driver's lines are the kernel readers'; Mooncake's healthy start)
        yield Clue(key="LOG_ERROR", label="cause", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, side=side_of_words(line) or (
                       "transfer_engine" if mooncake_glog(line) else None), strength=1,
                   why="its logger marks this line as an error; no catalogued message says "
                       "more of it")


#: an exception printed on its own line, not as the last line of a traceback: its class name
#: (dotted or not) at the line's start, a colon and its message
_EXCEPTION = linear.compile(r"^(?:[A-Za-z_]\w{0,60}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception): \S")
_EXC_MARKS = marks("Error: ", "Exception: ")


@reader("exception_lines")
def exception_lines(src: Source) -> Iterator[Clue]:
    """Exceptions printed on a line of their own, with no traceback above them (a handler
    that logs ``str(exc)``, a worker's one-line report): weak causes, like an error line."""
    if not src.text or src.kind in ("metrics", "server_info", "load", "stacks", "goroutines"):
        return
    if not has_any(src.text, _EXC_MARKS):
        return
    found = first_lines_with(src.text, ("Error: ", "Exception: "), _MAX_LINES + 1)
    if len(found) > _MAX_LINES:
        return  # (a log full of them is read by the readers of its format)
    text_lines: Sequence[str] | None = None
    for no, line in found:
        if _EXCEPTION.search(line.strip()) is None or line[:1].isspace():
            continue
        if text_lines is None:
            text_lines = split_lines(src.text)
        if _inside_traceback(text_lines, no):
            continue
        yield Clue(key="EXCEPTION_LINE", label="cause", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, side=side_of_words(line), strength=1,
                   why="an exception printed on a line of its own, with no traceback: what "
                       "raised it is not in the evidence")


def _inside_traceback(lines: Sequence[str], no: int) -> bool:
    """The exception line ``no`` (1-based) ends a traceback or a chained one: a frame, a code
    line or another exception's context is right above it."""
    for k in range(no - 2, max(no - 4, -1), -1):
        prev = lines[k].rstrip("\r")
        if not prev.strip():
            continue
        return prev[:1].isspace() or prev.lstrip().startswith(("File \"", "Traceback", "^"))
    return False


#: an error's chain of causes as Rust's anyhow / eyre print it: the error, "Caused by:", then
#: its causes one per line ("    0: creating primary lease", "    1: grpc request error: ..."),
#: the innermost last
_CAUSED_BY = "Caused by:"
_CHAIN_ITEM = linear.compile(r"^\s{2,12}(?:\d{1,3}: )?(\S.{0,1000})$")
_MAX_CHAINS = 20


@reader("error_chains")
def error_chains(src: Source) -> Iterator[Clue]:
    """An error printed with its chain of causes: the innermost cause (the chain's last line)
    is the cause, the error it surfaced as is its consequence."""
    if not src.text or src.kind in ("metrics", "server_info", "load", "goroutines"):
        return
    found = first_lines_with(src.text, (_CAUSED_BY,), _MAX_CHAINS)
    if not found:
        return
    every = split_lines(src.text)
    for no, line in found:
        if line.strip() != _CAUSED_BY:
            continue
        head = next(((k, every[k - 1]) for k in range(no - 1, max(no - 4, 0), -1)
                     if every[k - 1].strip()), None)
        items = []
        for k in range(no, min(no + 30, len(every))):
            m = _CHAIN_ITEM.match(every[k].rstrip("\r"))
            if m is None:
                break
            items.append((k + 1, every[k]))
        if head is None or not items:
            continue
        last_no, last = items[-1]
        yield Clue(key="ERROR_CHAIN_ROOT", label="cause", text=last.strip()[:_MAX_TEXT],
                   source=src.path, line=last_no, role=src.role, host=src.host,
                   side=side_of_words(last), wedge=False, strength=2,
                   why="the innermost cause of an error's chain (\"Caused by:\", the last line)")
        yield Clue(key="ERROR_CHAIN_HEAD", label="consequence", text=head[1].strip()[:_MAX_TEXT],
                   source=src.path, line=head[0], time=parse_log_timestamp(head[1]),
                   role=src.role, host=src.host, wedge=False, strength=1,
                   why="the error its chain of causes explains, below it")
