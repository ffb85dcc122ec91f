"""Bounded file reads without a shell: the read loop and result shape every transport shares.

A file read yields the same CommandResult a `cat PATH` (or `tail -c N -- PATH`) would, with
argv ``("read", PATH)`` (``("read", "--tail", PATH)``): the byte cap, the deadline and the
"failure is data" rule are the same, and only regular files are opened (a FIFO, a tty or
/dev/zero is refused, so nothing blocks in open() or reads without end).
"""

from __future__ import annotations

import stat
import threading
import time
from typing import Protocol

from pdforensics.model import CommandResult

READ_VERB = "read"
CHUNK = 64 * 1024
# What `cat` exits with when it cannot read its file: parsers and rules see the same status.
READ_FAILED = 1


class Handle(Protocol):
    """An open file: positioned reads in chunks (a local fd, an SFTP file)."""

    def seek(self, offset: int) -> None: ...

    def read(self, n: int) -> bytes: ...


def read_argv(path: str, tail: bool) -> tuple[str, ...]:
    """The argv-like label a file read's CommandResult carries."""
    return (READ_VERB, "--tail", path) if tail else (READ_VERB, path)


def not_regular(mode: int | None) -> str | None:
    """Why a file of this st_mode is not read (None: a regular file, read it)."""
    if mode is None or stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISDIR, "a directory"))
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return f"{kind}: not read (it could block or never end)"


def read_bounded(handle: Handle, size: int, max_bytes: int, tail: bool, deadline: float,
                 stop: threading.Event) -> tuple[bytes, bool, bool]:
    """Read at most max_bytes before the deadline: (data, truncated, timed_out).

    A plain read takes the file from its start and is truncated when more than max_bytes
    follow (a file that grows without end stops at the cap). A tail read (`tail -c`) seeks to
    the last max_bytes of the `size` bytes stat saw and, when that window starts mid-file,
    drops the partial first line: a secret's name or `Bearer ` cut off before the window is
    not left half-seen. A tail is never marked truncated: keeping the end is what it asks."""
    start = 0
    limit = max_bytes + 1
    if tail:
        if size > max_bytes:
            start = size - max_bytes - 1  # one byte early: does the window begin a line?
            handle.seek(start)
        else:
            limit = max_bytes
    out = bytearray()
    timed_out = False
    while len(out) < limit and not stop.is_set():
        if time.monotonic() >= deadline:
            timed_out = True
            break
        chunk = handle.read(min(CHUNK, limit - len(out)))
        if not chunk:
            break
        out += chunk
    data, truncated = finish_window(bytes(out), start, max_bytes, tail)
    return data, truncated, timed_out


def finish_window(data: bytes, start: int, max_bytes: int, tail: bool) -> tuple[bytes, bool]:
    """What a read keeps of the bytes read from offset `start` (at most max_bytes + 1):
    (kept, truncated). A tail window that starts mid-file loses its partial first line."""
    if start > 0:
        nl = data.find(b"\n")
        return (data[nl + 1:] if nl >= 0 else b""), False
    return data[:max_bytes], not tail and len(data) > max_bytes


def file_result(host: str, source: str, path: str, tail: bool, t0: float, started: float,
                data: bytes = b"", truncated: bool = False, timed_out: bool = False,
                failed: str | None = None, error: str | None = None) -> CommandResult:
    """The CommandResult of a file read. `failed`: why the file could not be read (the
    host's answer, e.g. "Permission denied": exit status 1 like cat); `error`: the read
    itself broke (connection lost, session failed)."""
    if error is not None or timed_out or truncated:
        status = None
    else:
        status = READ_FAILED if failed is not None else 0
    return CommandResult(
        host=host, source=source, argv=read_argv(path, tail), exit_status=status,
        stdout=data, stderr=f"read {path}: {failed}\n" if failed else "",
        duration_s=time.monotonic() - t0, started_at=started, timed_out=timed_out,
        truncated=truncated, error=error)


def permission_denied(result: CommandResult) -> bool:
    """The host said the login user may not read this file (sudo may)."""
    return result.exit_status == READ_FAILED and "Permission denied" in result.stderr
