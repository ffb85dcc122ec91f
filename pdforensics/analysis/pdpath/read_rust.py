"""A Rust program's panic (smg / sglang-router are Rust binaries) -> a cause.

Rust's default hook prints ``thread '<name>' panicked at <file>:<line>:<col>:`` and the
message on the next line (Rust 1.73 and later), or ``thread 'main' panicked at '<message>',
<file>:<line>:<col>`` (before). A panic ends its thread, and the process with it when the
thread is the main one or the binary aborts on panic: it is the failure, not a consequence.
Its stage is where the file places it (after the router's start-up steps and before any
request: start-up, reason._starting_up).
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.read_python import _stamp
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with, split_lines

_PANIC = linear.compile(r"thread '([^'\n]{1,100})' panicked at (.{1,400})")
#: the location the new format ends its header line with: "src/x.rs:51:21:"
_AT_LOCATION = linear.compile(r"\.rs:\d{1,7}:\d{1,5}:?\s*$")
#: the old format's quoted message before its location
_QUOTED = linear.compile(r"^'(.{1,400})', \S{1,300}\.rs:\d{1,7}:\d{1,5}")
_MAX_PANICS = 4
_MAX_TEXT = 500


@reader("rust_panic")
def rust_panic_clues(src: Source) -> Iterator[Clue]:
    """One cause per panic (the first few): its message line, the thread as the suspect."""
    found = first_lines_with(src.text, ("' panicked at ",), _MAX_PANICS)
    if not found:
        return
    every = split_lines(src.text)
    for no, line in found:
        m = _PANIC.search(line)
        if m is None:
            continue
        at, message_no = m.group(2).strip(), no
        quoted = _QUOTED.match(at)
        message = quoted.group(1) if quoted is not None else ""
        if quoted is None and _AT_LOCATION.search(at) and no < len(every):
            message_no = no + 1  # the new format: the message is the next line
            message = every[no].strip()
        text = message or line.strip()
        yield Clue(key="RUST_PANIC", label="cause", text=text[:_MAX_TEXT], source=src.path,
                   line=message_no, time=_stamp(line), role=src.role, host=src.host,
                   suspect=f"thread '{m.group(1)}'", wedge=False, strength=3,
                   why=f"the Rust program panicked in thread '{m.group(1)}' at {at[:120]}: the "
                       "thread ends (the process, when it is the main one or panics abort)")
