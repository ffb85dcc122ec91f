"""SshTransport channels over a real sshd with a small MaxSessions: back-pressure, output caps,
stderr, exit codes, trickling output and timeouts.

When sshd refuses several session opens at once, paramiko hands the refusal (a ChannelException)
to only one of the waiting threads; the others see a bare "Unable to open channel.". Both are
MaxSessions back-pressure and must be waited out, not reported as failures.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.lab import sshd
from pdforensics.lab.layout import LabHost
from pdforensics.lab.procs import kill_all, spawn
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.ssh import SshTransport
from tests.support import ports

pytestmark = pytest.mark.lab

ADDRESS = "127.0.1.200"
PORT = ports.port((ADDRESS,))


@pytest.fixture(scope="module")
def tight_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSpec]:
    """One stock sshd allowing only 2 sessions per connection."""
    lab_dir = tmp_path_factory.mktemp("tight-sshd")
    host = LabHost("tight", "decode", ADDRESS, ADDRESS, ())
    sshd.prepare(lab_dir, (host,), PORT)
    sshd.ensure_sudo_user("pdfx", lab_dir)  # the lab's ops user: root's shell start-up is slow here
    conf = lab_dir / "sshd" / "tight.conf"
    conf.write_text(conf.read_text() + "MaxSessions 2\n")
    proc = spawn(sshd.sshd_argv(lab_dir, host), dict(os.environ), lab_dir / "sshd.log", lab_dir)
    try:
        end = time.monotonic() + 20
        while not sshd.banner_ready(ADDRESS, PORT):
            assert time.monotonic() < end, (lab_dir / "sshd.log").read_text()
            time.sleep(0.1)
        yield HostSpec(name="tight", address=ADDRESS, port=PORT, user="pdfx",
                       identity=str(lab_dir / "keys" / "id_ed25519"),
                       known_hosts=str(lab_dir / "keys" / "known_hosts"))
    finally:
        left = kill_all([proc])
        sshd.revoke_sudo_user(lab_dir)  # the ops user and its sudoers drop-in
        assert not left


@pytest.fixture(scope="module")
def transport(tight_sshd: HostSpec) -> Iterator[SshTransport]:
    t = SshTransport(tight_sshd)
    t.connect(10.0)
    try:
        yield t
    finally:
        t.close()


def test_output_over_the_cap_is_cut_and_marked(transport: SshTransport) -> None:
    r = transport.run("big", ["head", "-c", "300000", "/dev/zero"], 20.0, 1000)
    assert r.truncated and r.stdout == b"\0" * 1000


def test_large_output_arrives_whole(transport: SshTransport) -> None:
    r = transport.run("big", ["head", "-c", "3000000", "/dev/zero"], 20.0, 10 << 20)
    assert (r.exit_status, len(r.stdout), r.truncated, r.error) == (0, 3_000_000, False, None)


def test_stderr_only_and_exit_status(transport: SshTransport) -> None:
    r = transport.run("fail", ["sh", "-c", "echo oops >&2; exit 3"], 20.0, 1000)
    assert (r.exit_status, r.stdout, r.stderr, r.timed_out) == (3, b"", "oops\n", False)


def test_trickling_output_is_all_kept(transport: SshTransport) -> None:
    r = transport.run("slow", ["sh", "-c", "echo a; sleep 0.5; echo b >&2; sleep 0.5; echo c"], 20.0, 1000)
    assert (r.exit_status, r.stdout, r.stderr) == (0, b"a\nc\n", "b\n")
    assert r.duration_s >= 1.0


def test_silent_command_times_out_locally(transport: SshTransport) -> None:
    t0 = time.monotonic()
    r = transport.run("hang", ["sleep", "30"], 1.0, 1000)
    assert r.timed_out and r.exit_status is None
    assert time.monotonic() - t0 < 10


def test_concurrent_channels_beyond_max_sessions_all_complete(tight_sshd: HostSpec, tmp_path: Path) -> None:
    transport = SshTransport(tight_sshd)
    transport.connect(10.0)
    results: list[CommandResult] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(2):
            r = transport.run("echo", ["echo", "ok"], 30.0, 1000)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        transport.close()
    assert len(results) == 16
    failed = [(r.exit_status, r.error) for r in results if r.exit_status != 0 or r.stdout != b"ok\n"]
    assert not failed, failed


def test_output_after_the_exit_status_is_kept(transport: SshTransport) -> None:
    """sshd may send the exit status while the command's last output is still in its pipe: the
    output ends at EOF, not at the exit status (ps cut at 32768 bytes lost a host's ranks)."""
    results: list[CommandResult] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(8):
            r = transport.run("ps", ["head", "-c", "40000", "/dev/zero"], 30.0, 1 << 20)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 32
    assert sorted({(len(r.stdout), r.exit_status) for r in results}) == [(40000, 0)]


def test_aes_gcm_is_negotiated_first(transport: SshTransport) -> None:
    """A stock OpenSSH offers AES-GCM: the connection uses it (no per-packet HMAC in Python)."""
    assert transport._client is not None
    t = transport._client.get_transport()
    assert t is not None
    assert t.local_cipher == "aes128-gcm@openssh.com"
    assert getattr(t, "remote_cipher", None) == "aes128-gcm@openssh.com"  # paramiko has no stub for it
