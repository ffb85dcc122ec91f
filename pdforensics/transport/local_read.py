"""File reads on this machine: open, fstat, bounded read (no `cat` child process)."""

from __future__ import annotations

import os
import threading
import time

from pdforensics.model import CommandResult
from pdforensics.transport.file_read import file_result, not_regular, read_bounded


class _FdHandle:
    def __init__(self, fd: int):
        self.fd = fd

    def seek(self, offset: int) -> None:
        os.lseek(self.fd, offset, os.SEEK_SET)

    def read(self, n: int) -> bytes:
        return os.read(self.fd, n)


def read_local(host: str, source: str, path: str, timeout_s: float, max_bytes: int,
               tail: bool, stop: threading.Event) -> CommandResult:
    """Read a local regular file as Transport.read_file does. O_NONBLOCK: opening a FIFO
    never waits for a writer (it is then refused by its mode)."""
    started, t0 = time.time(), time.monotonic()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        return file_result(host, source, path, tail, t0, started,
                           failed=os.strerror(exc.errno) if exc.errno else str(exc))
    try:
        st = os.fstat(fd)
        refuse = not_regular(st.st_mode)
        if refuse is not None:
            return file_result(host, source, path, tail, t0, started, failed=refuse)
        data, truncated, timed_out = read_bounded(_FdHandle(fd), st.st_size, max_bytes, tail,
                                                  t0 + timeout_s, stop)
    except OSError as exc:
        return file_result(host, source, path, tail, t0, started,
                           failed=os.strerror(exc.errno) if exc.errno else str(exc))
    finally:
        os.close(fd)
    error = "capture stopped" if stop.is_set() and not timed_out else None
    return file_result(host, source, path, tail, t0, started, data=data, truncated=truncated,
                       timed_out=timed_out, error=error)
