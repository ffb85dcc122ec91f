"""Stand-in of sglang's scheduler watchdog: when a forward batch stops feeding it, it logs a
py-spy-format dump of its own process ("Pyspy dump for PID N:", as sglang's
pyspy_dump_schedulers does) and "Scheduler watchdog timeout (...)" (soft: the lab lives on)."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

from pdfx_lab_runtime import log

#: the lab scales --watchdog-timeout down (300 s -> 2.5 s) so a wedge dumps within a test
SCALE = 120.0


def _short(path: str) -> str:
    """py-spy's short file names: the path below the longest sys.path entry holding it."""
    roots = sorted((p for p in sys.path if p and path.startswith(p.rstrip("/") + "/")), key=len)
    return path[len(roots[-1].rstrip("/")) + 1:] if roots else path


def pyspy_text() -> str:
    """This process's threads in py-spy dump's text format (leaf frame first)."""
    with open("/proc/self/cmdline", "rb") as fh:
        cmd = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    v = sys.version_info
    lines = [f"Process {os.getpid()}: {cmd}", f"Python v{v.major}.{v.minor}.{v.micro} "
             f"({sys.executable})", ""]
    threads = {t.ident: t for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        t = threads.get(ident)
        name = t.name if t is not None else "Thread"
        lines.append(f'Thread {getattr(t, "native_id", None) or ident} (idle): "{name}"')
        f = frame
        while f is not None:
            code = f.f_code
            func = getattr(code, "co_qualname", code.co_name)
            lines.append(f"    {func} ({_short(code.co_filename)}:{f.f_lineno})")
            f = f.f_back
    return "\n".join(lines)


class Watchdog:
    def __init__(self, timeout: float, rank: int = 0):
        self.timeout = timeout
        self.rank = rank
        self._counter = 0
        self._in_batch = False

    def feed(self) -> None:
        self._counter += 1

    @contextmanager
    def batch(self):
        """A forward batch: only a batch that stops feeding the watchdog makes it fire."""
        self._in_batch = True
        try:
            yield
        finally:
            self._in_batch = False

    def _watchdog_thread(self) -> None:
        last, since, fired = -1, time.monotonic(), False
        while True:
            time.sleep(0.25)
            now, counter = time.monotonic(), self._counter
            if counter != last or not self._in_batch:
                last, since, fired = counter, now, False
                continue
            if not fired and now - since > self.timeout / SCALE:
                fired = True  # once per stall (sglang re-arms; the lab keeps its log short)
                tag = f"TP{self.rank}"
                log(tag, f"Pyspy dump for PID {os.getpid()}:\n{pyspy_text()}\n")
                log(tag, f"Scheduler watchdog timeout (self.watchdog_timeout={self.timeout!r}, "
                         "self.soft=True)")
