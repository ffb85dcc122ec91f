"""The session runner's local side on scripted channel bytes: a login banner before the hello,
frames split anywhere, and hostile output (garbage, oversized frames, a host that never says
hello) that must end in a clean fallback, never a hang or an exception in a worker."""

from __future__ import annotations

import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.transport.runner import SessionRunner
from pdforensics.transport.runner_script import HELLO


class ScriptedChannel:
    """Just enough of paramiko.Channel: recv gives `before` (the banner and hello) at once and
    `after` (the answers) once a request was sent, in pieces of `piece` bytes; then EOF."""

    def __init__(self, before: bytes, after: bytes = b"", hold_open: bool = False, piece: int = 1 << 16):
        self.before, self.after, self.piece = before, after, piece
        self.sent = bytearray()
        self.closed = False
        self.hold_open = hold_open
        self.status_event = threading.Event()
        self.status_event.set()  # the exit status (127) is there once the output ends

    def exec_command(self, command: str) -> None:
        nonce = command.split()[-1].encode()  # the runner's argv ends with its nonce
        self.before = self.before.replace(b"NONCE", nonce)

    def _next(self) -> bytes | None:
        for name in ("before", "after"):
            data = getattr(self, name)
            if data and (name == "before" or b'{"i"' in self.sent):  # a request, not the script
                setattr(self, name, data[self.piece:])
                return data[:self.piece]
            if data:
                return None
        return b""

    def settimeout(self, _t: float) -> None:
        pass

    def recv_stderr_ready(self) -> bool:
        return False

    def recv(self, _n: int) -> bytes:
        chunk = self._next()
        if chunk:
            return chunk
        if chunk is None or (self.hold_open and not self.closed):
            time.sleep(0.05)
            raise TimeoutError
        return b""

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def exit_status_ready(self) -> bool:
        return True

    def recv_exit_status(self) -> int:
        return 127


def _runner(chan: ScriptedChannel) -> SessionRunner:
    return SessionRunner("h", lambda _d: (chan, None), threading.Event(), lambda: False)  # type: ignore[arg-type,return-value]


def _hello() -> bytes:
    body = HELLO + b" NONCE"
    return b"0 h %d\n" % (len(body) + 16 - len(b"NONCE")) + body


def test_banner_before_hello_is_kept_apart_and_frames_split_anywhere() -> None:
    chan = ScriptedChannel(b"Welcome to gpu-07\n" + _hello(), b"1 o 5\nhello1 e 3\nerr1 x 1\n0",
                           hold_open=True, piece=3)
    r = _runner(chan)
    result = r.run("x", ("printf", "hello"), 5, 100)
    chan.closed = True
    assert result is not None and result.ok and result.stdout == b"hello" and result.stderr == "err"
    assert r.banner == b"Welcome to gpu-07\n"
    assert b'"a": ["printf", "hello"]' in chan.sent


def test_a_host_that_never_says_hello_is_refused() -> None:
    chan = ScriptedChannel(b"bash: python3: command not found\n")
    r = _runner(chan)
    assert r.run("x", ("true",), 5, 100) is None
    assert r.refused and "did not start" in r.refused


def test_an_oversized_frame_breaks_the_session_and_ends_the_call() -> None:
    chan = ScriptedChannel(_hello(), b"1 o 999999999\n" + b"x" * 100, hold_open=True)
    r = _runner(chan)
    t0 = time.monotonic()
    result = r.run("x", ("true",), 5, 100)
    chan.closed = True
    assert result is not None and result.error and "malformed" in result.error
    assert time.monotonic() - t0 < 3 and r.refused and "mid-capture" in r.refused
    assert r.run("x", ("true",), 5, 100) is None  # later calls: one channel each


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_after_hello_end_the_call_without_raising(junk: bytes) -> None:
    chan = ScriptedChannel(_hello(), junk)
    r = _runner(chan)
    result = r.run("x", ("true",), 2, 100)
    if result is not None:  # None: the session had already ended, the call goes by exec
        assert result.ok or result.error or result.exit_status is not None or result.truncated
    assert r.refused or result is not None and result.ok


def test_a_host_sending_more_than_the_cap_is_cut_locally() -> None:
    flood = b"".join(b"1 o 65536\n" + b"A" * 65536 for _ in range(64))  # 4 MiB for a 1 KiB cap
    chan = ScriptedChannel(_hello(), flood + b"1 x 1\n0", hold_open=True)
    r = _runner(chan)
    result = r.run("x", ("cat", "/dev/zero"), 5, 1024)
    chan.closed = True
    assert result is not None and result.truncated and len(result.stdout) == 1024
    assert result.exit_status is None  # cut: no exit status, as a capped channel gives
