"""A native failure signal handler's report: the process took a fatal signal.

- absl's / glog's handler: "*** SIGSEGV received at time=... ***".
- UCX's handler ("[host:pid:0:tid] Caught signal 11 (Segmentation fault: ...)", then its own
  backtrace): UCX installs it in every process that loads it, so it reports the process's
  crash wherever it happened. The faulting frame (the first past the handler and the signal
  trampoline) says whose crash it is: one in a transfer library is the transfer engine's
  (read_host reads it), any other is the process's own, at that frame.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.read_python import _stamp
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import has_any, lines_with, marks
from pdforensics.parsers.transfer_engine import TRANSFER_LIBS, UCX_PREFIX, UCX_SIGNAL, crash_frame

_ABSL = linear.compile(r"\*\*\* (SIG[A-Z]{2,6}) received at time=\d{1,12}")
_MARKS = marks("received at time=", "Caught signal")
_MAX_TEXT = 500
_MAX_UCX_REPORTS = 4


@reader("native_signal")
def native_signal_clues(src: Source) -> Iterator[Clue]:
    """The process took a fatal signal (causes; see the module docstring)."""
    if not has_any(src.text, _MARKS):
        return
    yield from _ucx_caught(src)
    for no, line in lines_with(src.text, ("received at time=",)):
        m = _ABSL.search(line)
        if m is not None:  # (each copy: a log that repeats the report keeps it one burst)
            yield Clue(key="NATIVE_SIGNAL", label="cause", text=line.strip()[:_MAX_TEXT],
                       source=src.path, line=no, time=_stamp(line), role=src.role,
                       host=src.host, wedge=False, strength=3,
                       why=f"the process's failure signal handler caught {m.group(1)}: it crashed")


def _ucx_caught(src: Source) -> Iterator[Clue]:
    every: list[str] | None = None
    for no, line in lines_with(src.text, ("Caught signal",))[:_MAX_UCX_REPORTS]:
        m = UCX_SIGNAL.search(line)
        if m is None or UCX_PREFIX.search(line) is None:
            continue
        every = every if every is not None else src.text.split("\n")
        frame = crash_frame(every, no)
        if frame is None or frame[0].rsplit("/", 1)[-1].startswith(TRANSFER_LIBS):
            continue  # (the transfer engine's own crash: read_host's)
        owner, func = frame
        where = owner.rsplit("/", 1)[-1]
        yield Clue(key="NATIVE_SIGNAL", label="cause", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   suspect=where, wedge=False, strength=3,
                   why=f"the process took signal {m.group(1)} ({m.group(2)[:60]}) in "
                       f"{where}({func}): UCX's handler, loaded in every process that uses "
                       "it, only reported it; no transfer library is in the faulting frame")
