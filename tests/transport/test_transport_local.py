"""Local transport: caps, timeouts, non-UTF-8 output, missing commands, close."""

from __future__ import annotations

import sys
import threading
import time

from pdforensics.model import HostSpec
from pdforensics.transport.base import remote_argv
from pdforensics.transport.local import LocalTransport

T = LocalTransport(HostSpec(name="l", address="local"))


def test_runs_and_keeps_bytes() -> None:
    code = "import sys; sys.stdout.buffer.write(b'\\xff\\xfe ok')"
    r = T.run("x", remote_argv([sys.executable, "-c", code], 5), 5, 100)
    assert r.ok and r.stdout == b"\xff\xfe ok"


def test_byte_cap_truncates_without_waiting() -> None:
    t0 = time.monotonic()
    r = T.run("x", remote_argv(["yes"], 20), 20, 100_000)
    assert r.truncated and len(r.stdout) == 100_000 and time.monotonic() - t0 < 5


def test_remote_timeout_kills_and_keeps_partial_output() -> None:
    code = "import time,sys\nprint('first', flush=True)\ntime.sleep(60)"
    t0 = time.monotonic()
    r = T.run("x", remote_argv([sys.executable, "-c", code], 1), 1, 1000)
    assert r.exit_status == 124 and r.stdout == b"first\n"
    assert time.monotonic() - t0 < 4


def test_command_ignoring_sigterm_is_killed_by_grace() -> None:
    code = "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    t0 = time.monotonic()
    r = T.run("x", remote_argv([sys.executable, "-c", code], 1), 1, 1000)
    assert r.exit_status == 137 and time.monotonic() - t0 < 6


def test_missing_command_is_data() -> None:
    r = T.run("x", ["/nonexistent/tool"], 1, 10)
    assert r.error and "cannot run" in r.error and not r.ok


def test_close_stops_running_commands() -> None:
    t = LocalTransport(HostSpec(name="l", address="local"))
    out = []
    th = threading.Thread(target=lambda: out.append(t.run("x", ["sleep", "30"], 30, 10)))
    th.start()
    time.sleep(0.5)
    t.close()
    th.join(5)
    assert not th.is_alive() and not out[0].ok
