"""Read stack files of any supported format (sniffed from the content)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.errors import ParseError, PdforensicsError
from pdforensics.parsers.faulthandler import parse_faulthandler
from pdforensics.parsers.goroutines import parse_goroutines
from pdforensics.parsers.pyspy import (
    classify_pyspy_error,
    extract_watchdog_dumps,
    parse_pyspy_json,
    parse_pyspy_text,
)
from pdforensics.parsers.stackmodel import ProcessDump

# No leading ^: a literal prefix lets re skip ahead fast; _at_line_start checks the rest.
_GO = re.compile(r"goroutine (?:\d+ .*\]:|profile: total \d+)\s*$", re.M)
_PYSPY = re.compile(r"^(?:Process \d+: |Thread (?:0[xX][0-9A-Fa-f]+|\d+) \()", re.M)
_FAULT = re.compile(r"\(most recent call first\):\s*$", re.M)
_WATCHDOG = re.compile(r"Pyspy (?:dump for|failed to dump) PID \d+")


def _at_line_start(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` matches somewhere at the start of a line."""
    return any(m.start() == 0 or text[m.start() - 1] == "\n" for m in pattern.finditer(text))


def sniff_format(text: str) -> str | None:
    """pyspy-json | watchdog | goroutines | faulthandler | pyspy | None."""
    head = text.lstrip()[:1]
    if head == "[" and text.lstrip().startswith(("[\n", "[{", "[ ", "[]")):
        return "pyspy-json"
    if _WATCHDOG.search(text):
        return "watchdog"
    if _at_line_start(_GO, text):
        return "goroutines"
    if _FAULT.search(text):
        return "faulthandler"
    if _PYSPY.search(text) or classify_pyspy_error(text, None) is not None:
        return "pyspy"
    return None


def parse_stack_text(text: str, fmt: str | None = None) -> tuple[ProcessDump, ...]:
    """Parse text in the given (or sniffed) format."""
    fmt = fmt or sniff_format(text)
    if fmt == "pyspy-json":
        return parse_pyspy_json(text)
    if fmt == "watchdog":
        return extract_watchdog_dumps(text)
    if fmt == "goroutines":
        gs = parse_goroutines(text)
        return (ProcessDump("goroutines", gs),) if gs else ()
    if fmt == "faulthandler":
        fd = parse_faulthandler(text)
        return (fd,) if fd is not None else ()
    if fmt == "pyspy":
        return parse_pyspy_text(text)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    raise ParseError("unrecognised stack dump format", first, 1)


def load_stack_files(paths: Sequence[str], host: str = "") -> tuple[LabelledDump, ...]:
    """Read and parse each file; the file name is each dump's source."""
    out: list[LabelledDump] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError as exc:
            raise PdforensicsError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            dumps = parse_stack_text(text)
        except ParseError as exc:
            raise ParseError(f"{os.path.basename(path)}: {exc}") from None
        out.extend(LabelledDump(d, host=host, rank=d.rank, source=path) for d in dumps)
    return tuple(out)
