"""A login banner cut from outputs; an SSH server that stalls after its banner is named as such."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.errors import TransportError
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.banner import banner_note, strip_banner
from pdforensics.transport.ssh import SshTransport

BANNER = b"Welcome to decode-0\n"


def _result(stdout: bytes) -> CommandResult:
    return CommandResult("decode-0", "cmdline", ("cat", "/proc/1/cmdline"), 0, stdout, "", 0.1, time.time())


def test_banner_is_cut_from_the_front_only() -> None:
    argv = b"python3\0-m\0sglang.launch_server\0"
    assert strip_banner(_result(BANNER + argv), BANNER).stdout == argv
    assert strip_banner(_result(argv + BANNER), BANNER).stdout == argv + BANNER
    assert strip_banner(_result(argv), b"").stdout == argv
    assert "20 byte(s)" in banner_note(BANNER) and "Welcome to decode-0" in banner_note(BANNER)


@pytest.fixture
def stalling_server() -> Iterator[tuple[str, int]]:
    """Loopback TCP: sends an SSH banner, then nothing."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conns.append(conn)
            conn.sendall(b"SSH-2.0-OpenSSH_9.6p1\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()
    finally:
        stop.set()
        t.join()
        for c in conns:
            c.close()
        srv.close()


def test_handshake_stalled_after_the_banner_is_named(stalling_server: tuple[str, int], tmp_path: Path) -> None:
    addr, port = stalling_server
    known = tmp_path / "known_hosts"
    known.write_text("")
    t = SshTransport(HostSpec(name="stall-0", address=addr, port=port, known_hosts=str(known)))
    with pytest.raises(TransportError) as err:
        t.connect(2.0)
    msg = str(err.value)
    assert "stalled after the banner (SSH-2.0-OpenSSH_9.6p1)" in msg, msg
    assert "No existing session" not in msg
