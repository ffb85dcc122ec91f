"""A native failure signal handler's report: the process took a fatal signal.

- absl's / glog's handler: "*** SIGSEGV received at time=... ***".
- glibc's malloc checks ("double free or corruption (fasttop)"): it aborts the process.
- gdb stopping the program at a fatal signal ('Thread 1 "python3" received signal SIGSEGV').
- UCX's handler ("[host:pid:0:tid] Caught signal 11 (Segmentation fault: ...)", then its own
  backtrace): UCX installs it in every process that loads it, so it reports the process's
  crash wherever it happened. The faulting frame (the first past the handler and the signal
  trampoline) says whose crash it is: one in a transfer library is the transfer engine's
  (read_host reads it), any other is the process's own, at that frame.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.read_python import _stamp
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with, has_any, lines_with, marks, split_lines
from pdforensics.parsers.transfer_engine import TRANSFER_LIBS, UCX_PREFIX, UCX_SIGNAL, crash_frame

_ABSL = linear.compile(r"\*\*\* (SIG[A-Z]{2,6}) received at time=\d{1,12}")
#: Open MPI's (opal) handler: "[host:00030] *** Process received signal ***", then
#: "[host:00030] Signal: Bus error (7)" and its frames "[host:00030] [ 1] lib(func+0x7b)[0x..]"
_OPAL_SIGNAL = linear.compile(r"^\[([\w.-]{1,200}:\d{1,10})\] Signal: (.{1,80}) \((\d{1,3})\)\s*$")
_OPAL_FRAME = linear.compile(r"^\[[\w.-]{1,200}:\d{1,10}\] \[ {0,3}\d{1,3}\] ([^\s(\[]{1,300})"
                             r"\(([^)+\s]{0,200})(?:\+0x[0-9a-fA-F]{1,16})?\)")
#: glibc's malloc checks, printed just before it aborts the process (malloc/malloc.c)
_HEAP = ("double free or corruption", "free(): invalid pointer", "malloc(): corrupted",
         "corrupted size vs. prev_size", "munmap_chunk(): invalid pointer",
         "free(): invalid next size", "malloc(): memory corruption")
#: gdb stopping the program at a fatal signal: 'Thread 1 "python3" received signal SIGSEGV,
#: Segmentation fault.' (older: "Program received signal SIGSEGV, ..."); a SIGINT or SIGTRAP
#: there is the debugger's own stop, not a crash
_GDB_STOP = linear.compile(r'^((?:Thread \d{1,7}(?: "[^"]{0,60}")?)|Program) received signal '
                           r"(SIG(?:SEGV|BUS|FPE|ILL|ABRT)), (.{1,80})$")
_MARKS = marks("received at time=", "Caught signal", "*** Process received signal ***", *_HEAP,
               " received signal SIG")
#: UCX's calls that set a worker or an interface up: a crash under them is at start-up
_SETUP_CALLS = ("ucp_init", "ucp_worker_create", "ucp_worker_iface_open", "uct_iface_open",
                "uct_md_open")
_MAX_TEXT = 500
_MAX_UCX_REPORTS = 4


@reader("native_signal")
def native_signal_clues(src: Source) -> Iterator[Clue]:
    """The process took a fatal signal (causes; see the module docstring)."""
    if not has_any(src.text, _MARKS):
        return
    yield from _ucx_caught(src)
    yield from _opal_report(src)
    for no, line in first_lines_with(src.text, (" received signal SIG",), _MAX_UCX_REPORTS):
        g = _GDB_STOP.match(line.strip())
        if g is not None:
            yield Clue(key="NATIVE_SIGNAL", label="cause", text=line.strip()[:_MAX_TEXT],
                       source=src.path, line=no, role=src.role, host=src.host, wedge=False,
                       suspect=g.group(1).split(' "')[0] if g.group(1) != "Program" else None,
                       strength=3, why=f"gdb stopped the program at {g.group(2)} ({g.group(3)}): "
                                       "it crashed there")
    for no, line in first_lines_with(src.text, _HEAP, _MAX_UCX_REPORTS):
        yield Clue(key="HEAP_CORRUPTION", label="cause", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   wedge=False, strength=3,
                   why="glibc found the process's heap corrupted (memory freed twice or "
                       "written over) and aborted it")
    for no, line in lines_with(src.text, ("received at time=",)):
        m = _ABSL.search(line)
        if m is not None:  # (each copy: a log that repeats the report keeps it one burst)
            yield Clue(key="NATIVE_SIGNAL", label="cause", text=line.strip()[:_MAX_TEXT],
                       source=src.path, line=no, time=_stamp(line), role=src.role,
                       host=src.host, wedge=False, strength=3,
                       why=f"the process's failure signal handler caught {m.group(1)}: it crashed")


def _ucx_caught(src: Source) -> Iterator[Clue]:
    every: Sequence[str] | None = None
    for no, line in lines_with(src.text, ("Caught signal",))[:_MAX_UCX_REPORTS]:
        m = UCX_SIGNAL.search(line)
        if m is None or UCX_PREFIX.search(line) is None:
            continue
        every = every if every is not None else split_lines(src.text)
        frame = crash_frame(every, no)
        if frame is not None and frame[0].rsplit("/", 1)[-1].startswith(TRANSFER_LIBS):
            continue  # (the transfer engine's own crash: read_host's)
        where = frame[0].rsplit("/", 1)[-1] if frame is not None else None
        at = f" in {where}({frame[1]})" if frame is not None else ""
        yield Clue(key="NATIVE_SIGNAL", label="cause", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   suspect=where, wedge=False, strength=3,
                   why=f"the process took signal {m.group(1)} ({m.group(2)[:60]}){at}: UCX's "
                       "handler, loaded in every process that uses it, only reported it; "
                       + ("no transfer library is in the faulting frame" if frame is not None
                          else "no backtrace says where"))


def _opal_report(src: Source) -> Iterator[Clue]:
    """Open MPI's signal report: the signal, and the first frame past libc's signal
    trampoline (in a transfer library: the transfer engine's crash)."""
    found = first_lines_with(src.text, ("] Signal: ",), _MAX_UCX_REPORTS)
    if not found:
        return
    every = split_lines(src.text)
    for no, line in found:
        m = _OPAL_SIGNAL.match(line.strip())
        if m is None:
            continue
        frames = [(f.group(1).rsplit("/", 1)[-1], f.group(2)) for raw in every[no:no + 40]
                  if (f := _OPAL_FRAME.match(raw.strip())) is not None and f.group(2)]
        frame = next((f for f in frames if not f[0].startswith("libc.")), None)
        ours = frame is not None and frame[0].startswith(TRANSFER_LIBS)
        setup = any(fn.startswith(_SETUP_CALLS) for _lib, fn in frames)
        yield Clue(key="NATIVE_SIGNAL", label="cause", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   side="transfer_engine" if ours else None, suspect=m.group(1), wedge=False,
                   stage="startup" if setup else None,
                   strength=3,
                   why=f"Open MPI's handler: the process {m.group(1)} took signal {m.group(3)} "
                       f"({m.group(2)})" + (f" in {frame[0]}({frame[1]})" if frame else "")
                       + (": a transfer library's frame" if ours else "")
                       + ("; under the set-up of UCX's worker (start-up)" if setup else ""))
