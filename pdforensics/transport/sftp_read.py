"""File reads through the SSH connection's SFTP subsystem: no shell, no command on the host.

One SFTP session per connection, opened on first use. OpenSSH serves a session's requests
one at a time, so requests are sent under one lock (each stat, open, read chunk and close
on its own: a long log read does not hold back a /proc read for more than a chunk). Every
request is bounded by its read's deadline; a request that times out leaves the session's
replies out of step, so the session is dropped and the next read opens a new one.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import paramiko

from pdforensics.model import CommandResult
from pdforensics.transport.file_read import file_result, not_regular, read_bounded

# opens a session channel before the deadline: (channel, None) or (None, why not)
T = TypeVar("T")
OpenChannel = Callable[[float], tuple[paramiko.Channel | None, str | None]]


class _Timeout(Exception):
    """The lock or a request ran past the read's deadline."""


class _SftpHandle:
    """An SFTP file whose every request runs under the session lock within the deadline."""

    def __init__(self, reader: SftpReader, sftp: paramiko.SFTPClient, f: paramiko.SFTPFile,
                 deadline: float):
        self.reader, self.sftp, self.f, self.deadline = reader, sftp, f, deadline

    def seek(self, offset: int) -> None:
        self.f.seek(offset)  # only moves the local position: no request

    def read(self, n: int) -> bytes:
        return self.reader.call(self.sftp, self.deadline, lambda: self.f.read(n))


class SftpReader:
    """Reads files of one host over its SSH connection; safe to call from many threads."""

    def __init__(self, host: str, open_channel: OpenChannel, release: Callable[[paramiko.Channel], None],
                 stop: threading.Event, lost: Callable[[], bool]):
        self.host = host
        self._lost = lost
        self._open_channel = open_channel
        self._release = release
        self._stop = stop
        self._lock = threading.Lock()
        self._sftp: paramiko.SFTPClient | None = None
        #: why this host has no SFTP (None: it has, or nobody asked yet): reads go by exec
        self.refused: str | None = None

    def read(self, source: str, path: str, timeout_s: float, max_bytes: int,
             tail: bool = False) -> CommandResult | None:
        """The file's bytes as a CommandResult; None when the host has no SFTP subsystem."""
        if self.refused is not None:
            return None
        started, t0 = time.time(), time.monotonic()
        deadline = t0 + timeout_s

        def result(**kw: object) -> CommandResult:
            return file_result(self.host, source, path, tail, t0, started, **kw)  # type: ignore[arg-type]

        sftp: paramiko.SFTPClient | None = None
        try:
            sftp = self._session(deadline)
            if sftp is None:
                return None
            attrs = self.call(sftp, deadline, lambda: sftp.stat(path))
            refuse = not_regular(attrs.st_mode)
            if refuse is not None:
                return result(failed=refuse)
            f = self.call(sftp, deadline, lambda: sftp.open(path, "rb"))
            try:
                data, truncated, timed_out = read_bounded(
                    _SftpHandle(self, sftp, f, deadline), attrs.st_size or 0, max_bytes, tail,
                    deadline, self._stop)
            finally:
                self._close_file(sftp, f, deadline)
            error = "capture stopped" if self._stop.is_set() and not timed_out else None
            return result(data=data, truncated=truncated, timed_out=timed_out, error=error)
        except _Timeout:
            return result(timed_out=True)
        except OSError as exc:  # the host's answer: no such file, permission denied, ...
            if isinstance(exc, IOError) and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM):
                return result(failed=os.strerror(exc.errno))
            return result(failed=str(exc) or type(exc).__name__)
        except (paramiko.SSHException, paramiko.SFTPError, EOFError) as exc:
            with self._lock:
                if sftp is not None and self._sftp is sftp:
                    self._drop_locked()
            return result(error=self._broken(exc))

    def _session(self, deadline: float) -> paramiko.SFTPClient | None:
        """The connection's SFTP session, opened on first use; None when sshd has none."""
        with self._locked(deadline):
            if self._sftp is not None:
                return self._sftp
            if self.refused is not None:
                return None
            chan, why = self._open_channel(deadline)
            if chan is None:
                raise _Timeout() if why and "timed out" in why else paramiko.SSHException(why)
            chan.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chan.invoke_subsystem("sftp")
                self._sftp = paramiko.SFTPClient(chan)
            except (paramiko.SSHException, paramiko.SFTPError, EOFError, OSError) as exc:
                # SFTPError: the subsystem's first bytes were not SFTP (a login shell that
                # prints a banner or rc output before the server): no usable subsystem
                self._release(chan)
                if isinstance(exc, TimeoutError):
                    raise _Timeout() from None
                self.refused = f"no SFTP subsystem ({exc or type(exc).__name__})"
                return None
            return self._sftp

    def call(self, sftp: paramiko.SFTPClient, deadline: float, request: Callable[[], T]) -> T:
        """Run one SFTP request under the session lock, within the deadline."""
        with self._locked(deadline):
            if self._sftp is not sftp:  # dropped after another read's timeout
                raise paramiko.SSHException("SFTP session reset")
            chan = sftp.get_channel()
            assert chan is not None
            chan.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                return request()
            except TimeoutError:
                self._drop_locked()
                raise _Timeout() from None

    def _close_file(self, sftp: paramiko.SFTPClient, f: paramiko.SFTPFile, deadline: float) -> None:
        try:
            self.call(sftp, max(deadline, time.monotonic() + 1.0), f.close)
        except (_Timeout, OSError, paramiko.SSHException, paramiko.SFTPError, EOFError):
            pass

    class _Locked:
        def __init__(self, lock: threading.Lock, deadline: float):
            self.lock, self.deadline = lock, deadline

        def __enter__(self) -> None:
            if not self.lock.acquire(timeout=max(0.0, self.deadline - time.monotonic())):
                raise _Timeout()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    def _locked(self, deadline: float) -> SftpReader._Locked:
        return SftpReader._Locked(self._lock, deadline)

    def _drop_locked(self) -> None:
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            chan = sftp.get_channel()
            if chan is not None:
                self._release(chan)

    def _broken(self, exc: BaseException) -> str:
        if self._stop.is_set():
            return "capture stopped"
        if self._lost():
            return "connection lost"
        return f"SFTP failed: {exc or type(exc).__name__}"
