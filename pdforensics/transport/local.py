"""Local transport: subprocesses on this machine, same contract as SSH."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.base import STDERR_CAP, local_wait_s
from pdforensics.transport.local_read import read_local


class LocalTransport:
    """Runs commands as child processes in their own session, killed on timeout."""

    forwarding_refused = False  # nothing to forward: local endpoints are fetched by curl

    def fetch(self, source: str, url: str, timeout_s: float, max_bytes: int,
              body: bytes | None = None) -> CommandResult | None:
        """Local endpoints are fetched by their curl command."""
        return None

    def read_file(self, source: str, path: str, timeout_s: float, max_bytes: int,
                  tail: bool = False) -> CommandResult | None:
        """Read the file directly (same caps as `cat`; non-regular files refused)."""
        return read_local(self.host.name, source, path, timeout_s, max_bytes, tail, self._closed)

    def __init__(self, host: HostSpec):
        self.host = host
        self._closed = threading.Event()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def connect(self, timeout_s: float) -> None:
        return None

    def run(
        self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int
    ) -> CommandResult:
        started = time.time()
        t0 = time.monotonic()
        if self._closed.is_set():
            return _failed(self.host.name, source, argv, started, "transport closed")
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, "LC_ALL": "C"},
            )
        except OSError as exc:
            return _failed(self.host.name, source, argv, started, f"cannot run {argv[0]}: {exc}")
        with self._lock:
            self._procs.add(proc)
        try:
            out, err, truncated, timed_out = _pump(proc, local_wait_s(timeout_s), max_bytes,
                                                  self._closed)
        finally:
            with self._lock:
                self._procs.discard(proc)
        status = proc.returncode
        if status is not None and status < 0:
            status = 128 - status  # killed by a signal: report it as a shell would, like SSH
        error = None
        if self._closed.is_set() and status is None:
            error = "capture stopped"
        return CommandResult(
            host=self.host.name, source=source, argv=tuple(argv), exit_status=status,
            stdout=out, stderr=err.decode("utf-8", "replace"),
            duration_s=time.monotonic() - t0, started_at=started,
            timed_out=timed_out, truncated=truncated, error=error,
        )

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)


def _pump(
    proc: subprocess.Popen[bytes], wait_s: float, max_bytes: int, stop: threading.Event
) -> tuple[bytes, bytes, bool, bool]:
    """Read stdout/stderr with caps until exit, timeout, or stop; kill the group if needed."""
    assert proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    truncated = timed_out = False
    deadline = time.monotonic() + wait_s
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    open_streams = 2
    while open_streams:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        if stop.is_set():
            break
        for key, _ in sel.select(timeout=min(remaining, 0.2)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if key.data == "out":
                room = max_bytes - len(out)
                out += chunk[:room]
                if len(chunk) > room:
                    truncated = True
            elif len(err) < STDERR_CAP:
                err += chunk[: STDERR_CAP - len(err)]
        if truncated:
            break
    sel.close()
    if open_streams or proc.poll() is None:
        try:
            proc.wait(timeout=0.5 if not (timed_out or truncated or stop.is_set()) else 0)
        except subprocess.TimeoutExpired:
            pass
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return bytes(out), bytes(err), truncated, timed_out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _failed(
    host: str, source: str, argv: Sequence[str], started: float, error: str
) -> CommandResult:
    return CommandResult(
        host=host, source=source, argv=tuple(argv), exit_status=None, stdout=b"",
        stderr="", duration_s=0.0, started_at=started, error=error,
    )


class ThroughLocalClient:
    """Base of the transports whose every command runs through a local client process
    (`srun` into a Slurm job, `kubectl exec` into a pod): nothing is forwarded and no file is
    read without a process, so endpoints and file reads run as their commands there."""

    forwarding_refused = False  # endpoints are fetched by curl on the far side
    _local: LocalTransport

    def fetch(self, source: str, url: str, timeout_s: float, max_bytes: int,
              body: bytes | None = None) -> CommandResult | None:
        return None

    def read_file(self, source: str, path: str, timeout_s: float, max_bytes: int,
                  tail: bool = False) -> CommandResult | None:
        return None

    def close(self) -> None:
        self._local.close()
