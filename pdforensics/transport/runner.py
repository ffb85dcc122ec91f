"""One exec channel per host that runs every command and file read (the session runner).

sshd starts every exec channel through the login user's shell, and a GPU host's shell rc
(conda or pyenv init) costs about 0.2 CPU-s each time: more than most collectors themselves.
The runner (runner_script.py) is started once per connection, through that shell, and then runs
each command's argv directly (no shell) and reads files itself, concurrently, answering in
length-prefixed frames. A command keeps its argv, its remote `timeout -k 2 S` wrapping, its
caps and its local deadline, so its CommandResult is what its own exec channel would give.

On a host the capture reaches through `sudo -n`, the runner itself starts under `sudo -n`
(`as_root`): one sudo per host instead of one per privileged command, and files the login user
may not read need no batched sudo command. A command's own leading `sudo -n` is then dropped, and
its manifest row shows the argv the runner ran. Where sudo refuses that (a password, sudoers that
allow only some commands), the runner starts again as the login user and privileged commands keep
their own `sudo -n`.

When the runner cannot start (no python3 on the host, a shell that never hands over) or its
session breaks, `refused` says why and every later call returns None: the transport then uses
one exec channel per command (and SFTP for files), as before.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import threading
import time
from collections.abc import Callable, Sequence

import paramiko

from pdforensics import linear
from pdforensics.model import CommandResult
from pdforensics.transport.base import STDERR_CAP, local_wait_s, remote_argv
from pdforensics.transport.file_read import file_result, finish_window, not_regular
from pdforensics.transport.runner_script import HELLO, RUNNER_SCRIPT, bootstrap

SCRIPT = RUNNER_SCRIPT.encode()

OpenChannel = Callable[[float], tuple[paramiko.Channel | None, str | None]]
START_TIMEOUT_S = 20.0  # the login shell's rc, on a loaded host, before the hello frame
SESSION_LIMIT_S = 3600  # the runner's own remote `timeout`: it also ends when stdin closes
MAX_BANNER = 64 * 1024  # what a login shell may print before the hello frame
MAX_FRAME = 1 << 20  # the runner sends at most 64 KiB a frame; more is a broken session
_FRAME = linear.compile(rb"(\d{1,12}) ([a-z]) (\d{1,9})\n")
SIGNALLED = "ended without an exit status (killed by a signal on the host?)"


def _sudo_said_no(why: str) -> bool:
    """sudo's own refusals ("sudo: a password is required", "Sorry, user ... is not allowed")."""
    return "sudo" in why or "Sorry" in why


class _Call:
    """One request's frames as they arrive."""

    def __init__(self, cap: int) -> None:
        self.cap = cap  # bytes of stdout kept: cap + 1 tells "cut at the cap" (a hostile host's
        self.out = bytearray()  # runner may send more than ours ever would)
        self.err = bytearray()
        self.status: int | None = None
        self.signal: int | None = None
        self.end: tuple[bytes, bytes] | None = None  # (kind, payload) of the final frame
        self.error: str | None = None
        self.done = threading.Event()


class SessionRunner:
    """The runner of one SSH connection; safe to call from many threads."""

    interpreter = "python3"  # on the login PATH; `python3 -I -S` ignores the host's site-packages

    def __init__(self, host: str, open_channel: OpenChannel, stop: threading.Event,
                 lost: Callable[[], bool], as_root: bool = False):
        self.host = host
        self.as_root = as_root  # start under `sudo -n`; False again once sudo refused it
        self.root_refused: str | None = None  # why the runner runs as the login user instead
        self._deadline = 0.0
        self._open_channel = open_channel
        self._stop = stop
        self._lost = lost
        self._lock = threading.Lock()  # start-up, and the table of calls
        self._send_lock = threading.Lock()
        self._chan: paramiko.Channel | None = None
        self._calls: dict[int, _Call] = {}
        self._next_id = 1
        self._ready = threading.Event()
        self._started = False
        self._started_at = 0.0
        #: why commands go one exec channel each (None: the runner is up, or not tried yet)
        self.refused: str | None = None
        #: what the login shell printed before the runner took over (b"" on a quiet host)
        self.banner = b""
        self._greeted = False

    def describe(self) -> str | None:
        """How this host's commands ran, for the manifest (None: the runner was never asked)."""
        if not self._started:
            return None
        if self.refused is not None:
            return f"{'used, then' if self._greeted else 'not used:'} {self.refused}"
        digest = hashlib.sha256(SCRIPT).hexdigest()[:16]
        said = (f"one exec channel: {'sudo -n ' if self.as_root else ''}timeout -k 2 "
                f"{SESSION_LIMIT_S} {self.interpreter} -I -S -c <read {len(SCRIPT)} bytes from "
                f"stdin and run them> <nonce>; the runner script sent on stdin has sha256 {digest}")
        if self.as_root:
            said += "; it runs as root, so every command and file read of this host ran as root"
        elif self.root_refused is not None:
            said += (f"; as root it did not start ({self.root_refused}), so it runs as the login "
                     "user and privileged commands keep their own sudo -n")
        return said

    # -- start-up ---------------------------------------------------------------------
    def up(self, deadline: float) -> bool:
        """Start the runner on first use and wait for its hello; False when it cannot run."""
        with self._lock:
            if not self._started:
                self._started, self._started_at = True, time.monotonic()
                self._deadline = deadline
                self._start(deadline)
        given_up_at = self._started_at + START_TIMEOUT_S
        self._ready.wait(max(0.0, min(deadline, given_up_at) - time.monotonic()))
        with self._lock:
            if not self._ready.is_set() and self.refused is None and time.monotonic() >= given_up_at:
                self._refuse_locked(f"the runner did not start within {START_TIMEOUT_S:.0f} s")
            # a caller whose own deadline came first runs on its own channel; the runner stays
            return self.refused is None and self._ready.is_set()

    def _start(self, deadline: float) -> None:
        chan, why = self._open_channel(min(deadline, time.monotonic() + START_TIMEOUT_S))
        if chan is None:
            self.refused = f"no runner session ({why})"
            self._ready.set()
            return
        nonce = secrets.token_hex(8)
        argv = remote_argv((self.interpreter, "-I", "-S", "-c", bootstrap(len(SCRIPT)), nonce),
                           SESSION_LIMIT_S, sudo=self.as_root)
        try:
            chan.exec_command(shlex.join(argv))
            chan.sendall(SCRIPT)  # the bootstrap reads exactly this, then the requests follow
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self.refused = f"no runner session ({exc or type(exc).__name__})"
            self._ready.set()
            return
        self._chan = chan
        hello = b"0 h %d\n%s %s" % (len(HELLO) + 1 + len(nonce), HELLO, nonce.encode())
        threading.Thread(target=self._read_loop, args=(chan, hello), daemon=True,
                         name=f"{self.host}-runner").start()

    # -- calls ------------------------------------------------------------------------
    def run(self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int
            ) -> CommandResult | None:
        """Run a wrapped argv as its own exec channel would; None when the runner is not up."""
        started, t0 = time.time(), time.monotonic()
        deadline = t0 + local_wait_s(timeout_s)
        if not self.up(deadline):
            return None
        if self.as_root and tuple(argv[:2]) == ("sudo", "-n"):
            argv = argv[2:]  # the runner is root already: the row shows what it ran
        call_id, call = self._call({"a": list(argv), "c": max_bytes}, max_bytes)
        if call is None:
            return None
        timed_out = self._wait(call, deadline)
        if timed_out or (self._stop.is_set() and not call.done.is_set()):
            self._send({"i": call_id, "k": 1})
        self._forget(call_id)
        truncated = len(call.out) > max_bytes
        status = call.status if call.done.is_set() and not truncated else None
        error = call.error
        if error is None and not call.done.is_set() and not timed_out:
            error = "capture stopped"
        if error is None and call.signal is not None and not truncated:
            error = SIGNALLED
        return CommandResult(
            host=self.host, source=source, argv=tuple(argv), exit_status=status,
            stdout=bytes(call.out[:max_bytes]), stderr=call.err.decode("utf-8", "replace"),
            duration_s=time.monotonic() - t0, started_at=started, timed_out=timed_out,
            truncated=truncated, error=error)

    def read(self, source: str, path: str, timeout_s: float, max_bytes: int, tail: bool
             ) -> CommandResult | None:
        """Read a regular file as Transport.read_file does; None when the runner is not up."""
        started, t0 = time.time(), time.monotonic()
        deadline = t0 + timeout_s
        if not self.up(deadline):
            return None
        call_id, call = self._call({"r": path, "c": max_bytes, "t": int(tail)}, max_bytes)
        if call is None:
            return None
        timed_out = self._wait(call, deadline)
        self._forget(call_id)

        def result(**kw: object) -> CommandResult:
            return file_result(self.host, source, path, tail, t0, started, **kw)  # type: ignore[arg-type]

        if timed_out:
            return result(timed_out=True)
        if call.error is not None or call.end is None:
            return result(error=call.error or "capture stopped")
        kind, payload = call.end
        if kind == b"f":
            return result(failed=payload.decode("utf-8", "replace")[:200])
        if kind == b"n":
            return result(failed=not_regular(int(payload or b"0", 8)) or "not a regular file")
        data, truncated = finish_window(bytes(call.out), int(payload or b"0"), max_bytes, tail)
        return result(data=data, truncated=truncated)

    def _call(self, request: dict[str, object], cap: int) -> tuple[int, _Call | None]:
        """Send a new request; (its id, its call), or (0, None) when the runner is not up."""
        with self._lock:
            if self.refused is not None or self._chan is None:
                return 0, None
            call_id, self._next_id = self._next_id, self._next_id + 1
            call = self._calls[call_id] = _Call(cap)
        self._send({"i": call_id, **request})
        return call_id, call

    def _send(self, request: dict[str, object]) -> None:
        """Write one request line; a failed write breaks the session (its calls end)."""
        chan = self._chan
        if chan is None:
            return
        try:
            with self._send_lock:
                chan.sendall(json.dumps(request).encode() + b"\n")
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._broken(f"the runner session failed: {exc or type(exc).__name__}")

    def _wait(self, call: _Call, deadline: float) -> bool:
        """Wait for the call's end; True when the deadline passed first."""
        while not call.done.is_set():
            if self._stop.is_set():
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            call.done.wait(min(0.2, remaining))
        return False

    def _forget(self, call_id: int) -> None:
        with self._lock:
            self._calls.pop(call_id, None)

    # -- the channel's reader ---------------------------------------------------------
    def _read_loop(self, chan: paramiko.Channel, hello: bytes) -> None:
        try:
            self._read_frames(chan, hello)
        except Exception as exc:  # noqa: BLE001  # a hostile peer can raise odd things: end, don't hang
            self._refuse(f"the runner session failed: {type(exc).__name__}: {exc}"[:200])

    def _read_frames(self, chan: paramiko.Channel, hello: bytes) -> None:
        buf = bytearray()
        errtail = bytearray()
        greeted = False
        chan.settimeout(0.2)
        while True:
            if chan.recv_stderr_ready():
                errtail = (errtail + chan.recv_stderr(65536))[-4096:]
            try:
                chunk = chan.recv(65536)
            except TimeoutError:
                if self._stop.is_set() or chan.closed:
                    break
                continue
            except (paramiko.SSHException, OSError, EOFError):
                break
            if not chunk:
                break
            buf += chunk
            if not greeted:
                at = buf.find(hello)
                if at < 0:
                    if len(buf) > MAX_BANNER + len(hello):
                        self._refuse("the login shell printed more than 64 KiB before the runner")
                        return
                    continue
                self.banner = bytes(buf[:at])
                del buf[:at + len(hello)]
                greeted = self._greeted = True
                self._ready.set()
            if not self._frames(buf):
                self._broken("the runner session sent a malformed frame")
                return
        if not greeted:
            chan.status_event.wait(2.0)  # the exit status can follow the end of the output
            while chan.recv_stderr_ready():
                errtail = (errtail + chan.recv_stderr(65536))[-4096:]
            status = chan.recv_exit_status() if chan.exit_status_ready() else None
            last = errtail.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            why = f"exit {status}: {last[0][:160]}"
            if self.as_root and _sudo_said_no(why) and not self._stop.is_set():
                self._as_login_user(why)
                return
            self._refuse(f"the runner did not start ({why})")
            return
        self._broken("capture stopped" if self._stop.is_set() else
                     "connection lost" if self._lost() else "the runner session ended")

    def _frames(self, buf: bytearray) -> bool:
        """Hand every whole frame in buf to its call; False on a malformed header."""
        pos = 0
        while True:
            m = _FRAME.match(buf, pos)
            if m is None:
                if len(buf) - pos > 40 or (len(buf) > pos and b"\n" in buf[pos:]):
                    return False
                break
            length = int(m.group(3))
            if length > MAX_FRAME:
                return False
            if len(buf) < m.end() + length:
                break
            self._deliver(int(m.group(1)), m.group(2), bytes(buf[m.end():m.end() + length]))
            pos = m.end() + length
        del buf[:pos]
        return True

    def _deliver(self, call_id: int, kind: bytes, payload: bytes) -> None:
        with self._lock:
            call = self._calls.get(call_id)
        if call is None or call.done.is_set():
            return  # a call given up on (timed out, killed): its late frames
        if kind == b"o":
            call.out += payload[:max(0, call.cap + 1 - len(call.out))]
        elif kind == b"e":
            call.err += payload[:max(0, STDERR_CAP - len(call.err))]
        elif kind == b"x":
            if payload.startswith(b"s"):
                call.signal = int(payload[1:] or b"0")
            else:
                call.status = int(payload or b"0")
            call.done.set()
        elif kind in (b"r", b"f", b"n"):
            call.end = (kind, payload)
            call.done.set()

    def _as_login_user(self, why: str) -> None:
        """sudo would not start the runner: start it again as the login user (one more login)."""
        with self._lock:
            self.as_root, self.root_refused = False, why
            self._chan = None
            self._start(self._deadline)

    # -- failure ----------------------------------------------------------------------
    def _refuse(self, why: str) -> None:
        with self._lock:
            self._refuse_locked(why)

    def _refuse_locked(self, why: str) -> None:
        if self.refused is None:
            self.refused = why
        self._ready.set()
        self._fail_calls_locked(why)

    def _broken(self, why: str) -> None:
        """The session ended: calls under way end with why; later calls go by exec."""
        with self._lock:
            if self.refused is None and not self._stop.is_set():  # stopped: the capture is over
                self.refused = f"the runner session ended mid-capture ({why})"
            self._fail_calls_locked(why)

    def _fail_calls_locked(self, why: str) -> None:
        for call in self._calls.values():
            if not call.done.is_set():
                call.error = why
                call.done.set()

