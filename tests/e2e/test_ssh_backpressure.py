"""Channel back-pressure over a real sshd with a small MaxSessions: every run still completes.

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

ADDRESS, PORT = "127.0.1.200", 41950


@pytest.fixture(scope="module")
def tight_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSpec]:
    """One stock sshd allowing only 2 sessions per connection."""
    lab_dir = tmp_path_factory.mktemp("tight-sshd")
    host = LabHost("tight", "decode", ADDRESS, ADDRESS, ())
    sshd.prepare(lab_dir, (host,), PORT)
    conf = lab_dir / "sshd" / "tight.conf"
    conf.write_text(conf.read_text() + "MaxSessions 2\n")
    proc = spawn(sshd.sshd_argv(lab_dir, host), dict(os.environ), lab_dir / "sshd.log", lab_dir)
    try:
        end = time.monotonic() + 20
        while not sshd.banner_ready(ADDRESS, PORT):
            assert time.monotonic() < end, (lab_dir / "sshd.log").read_text()
            time.sleep(0.1)
        yield HostSpec(name="tight", address=ADDRESS, port=PORT, user="root",
                       identity=str(lab_dir / "keys" / "id_ed25519"),
                       known_hosts=str(lab_dir / "keys" / "known_hosts"))
    finally:
        assert not kill_all([proc])


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
