"""One snapshot at a time per store: an flock on `<store>/.lock`, never waited on."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pdforensics.errors import ExitStatus, PdforensicsError

LOCK = ".lock"


class StoreBusy(PdforensicsError):
    """Another snapshot (or prune) holds the store's lock."""

    exit_code = ExitStatus.BUSY


@contextmanager
def store_lock(store: Path) -> Iterator[None]:
    """Hold the store lock or raise StoreBusy at once (overlapping cron runs do not pile up).

    The kernel drops an flock when its holder dies, so a crashed run never leaves it stuck.
    """
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = store / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise StoreBusy(f"store {store} is locked by another run (pid {holder}); "
                            "not starting a second one") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
