"""The lines a Python traceback is made of, for every reader that walks one: a frame line,
a caret line under the failing code, and the exception line it ends with."""

from __future__ import annotations

from pdforensics import linear

#: '  File "x.py", line 12, in f' (a traceback, "line 12 in f" in faulthandler's form)
FRAME = linear.compile(r"""^\s*File "([^"]{1,1000})"(?:, line \d{1,9},?|,) in (\S{1,300})""")
#: the caret line Python 3.11+ prints under the failing code
CARET = linear.compile(r"^\s*[\^~]{3,}\s*$")
#: a traceback's last line: "SomeError: message" (module-qualified, after a log prefix or not)
EXC_LINE = linear.compile(r"^(?:\[[^\]]{1,80}\]\s*)?((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|"
                          r"Interrupt|Exit|Failure|Timeout))(?::\s+(.{1,800}))?\s*$")
#: multiprocessing's line above a child process's traceback (BaseProcess._bootstrap)
MP_PROCESS = linear.compile(r"(?:^|\s)Process ([\w:.\-]{1,60}):\s+Traceback \(most recent")
#: a module's own exception class of another name, with its message ("zmq.error.Again: ...")
EXC_QUALIFIED = linear.compile(r"^(?:\[[^\]]{1,80}\]\s*)?((?:[a-z_]\w{0,40}\.){1,6}[A-Z]\w{0,60}):\s+"
                               r"(.{1,800})$")


#: the function a frame line ends with, however mangled the rest ("... in  in
#: ncclCommInitRankncclCommInitRank": two processes' dumps written into one terminal at once)
_ENDS_IN = linear.compile(r" in ([\w.<>]{1,300})\s*$")


def mangled_frames(every: list[tuple[int, str]], k: int) -> list[tuple[str, str]]:
    """(line, function) of the frame lines after index ``k`` that Python's frame pattern no
    longer matches (dumps interleaved in one terminal): the words still say where it was."""
    out: list[tuple[str, str]] = []
    for _no, line in every[k:k + 40]:
        if 'File "' not in line or FRAME.match(line) is not None:
            continue
        m = _ENDS_IN.search(line)
        if m is not None:
            out.append((line.strip(), m.group(1)))
    return out


#: Python's line between two tracebacks of one chain: the later exception follows from the
#: earlier one (raised from it, or while handling it)
CHAINED = linear.compile(r"The above exception was the direct cause|During handling of the above "
                         r"exception")
#: a module that cannot be imported: the program fails while it starts
IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")
TIMEOUT_WHY = ("; a TimeoutError is a wait that ran out: what it waited for (a worker, a "
               "peer, a lock) was held, and that is the cause")
CANCELLED_WHY = ("; a CancelledError is raised in a task another party cancelled (a timeout, "
                "an abort, a shutdown): what cancelled it is the cause")
INTERRUPT_WHY = ("; a KeyboardInterrupt is the program interrupted from outside (Ctrl-C, a "
                 "SIGINT): where it was is the question, not the cause")
CHAIN_WHY = ("; raised because of, or while handling, the exception printed above it (Python's "
             "chain): that one is the cause")
#: a chained exception whose earlier one the text does not hold (the paste begins after it)
CHAIN_CUT_WHY = ("; Python's chain says an earlier exception came first, but the text does not "
                 "hold it: this is the first failure shown")

