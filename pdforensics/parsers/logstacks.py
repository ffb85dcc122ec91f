"""Stack dumps SGLang itself wrote into its log: the watchdogs' ``Pyspy dump for PID N``
blocks (``[time TPn] Pyspy dump for PID N[ (py-spy dump --native --pid N)]:`` then py-spy's
text) and faulthandler's ``Thread 0x... (most recent call first):`` dumps before a crash.

Tracebacks of exceptions are not stacks of a hang (the log signatures read them), so they
are left out; so are goroutine dumps (not SGLang's).
"""

from __future__ import annotations

from pdforensics.parsers.frames import ProcessDump
from pdforensics.parsers.stackscan import scan_text

LOG_STACK_KINDS = frozenset({"watchdog", "faulthandler", "pyspy"})


def harvest_log_stacks(text: str) -> tuple[ProcessDump, ...]:
    """Every watchdog / faulthandler dump in a log, in file order within each stream, with
    the rank and time its log prefix gave; () for a log without any."""
    if not text.strip():
        return ()
    return tuple(d for d in scan_text(text).dumps if d.kind in LOG_STACK_KINDS)
