"""File reads through the SSH connection's SFTP subsystem over a real sshd: every file-read
collector gives the bytes its command gives; FIFOs, /dev/zero and growing files stay within
cap and timeout; no subsystem, or a file only sudo may read, falls back to the command."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.capture.file_reads import FileReads
from pdforensics.collectors.base import REGISTRY
from pdforensics.lab import sshd
from pdforensics.lab.layout import LabHost
from pdforensics.lab.procs import kill_all, spawn
from pdforensics.model import HostSpec
from pdforensics.transport.ssh import SshTransport
from tests.support import ports
from tests.support.file_reads import file_job, growing_file, shared_dir

pytestmark = pytest.mark.lab

ADDRESS, BARE = "127.0.1.201", "127.0.1.202"  # with SFTP, without a Subsystem line
PORT = ports.port((ADDRESS, BARE))
FILE_SOURCES = sorted(name for name, s in REGISTRY.items() if s.reads is not None)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HostSpec, HostSpec]]:
    """Two stock sshds logging in the lab's ops user (sudo = true): one serves SFTP."""
    lab_dir = tmp_path_factory.mktemp("sftp-sshd")
    labs = (LabHost("files", "decode", ADDRESS, ADDRESS, ()), LabHost("bare", "decode", BARE, BARE, ()))
    sshd.prepare(lab_dir, labs, PORT, no_sftp=("bare",))
    sshd.ensure_sudo_user("pdfx", lab_dir)
    procs = [spawn(sshd.sshd_argv(lab_dir, h), dict(os.environ), lab_dir / f"{h.name}.log", lab_dir)
             for h in labs]
    try:
        end = time.monotonic() + 20
        while not all(sshd.banner_ready(h.bind, PORT) for h in labs):
            assert time.monotonic() < end, (lab_dir / "bare.log").read_text()
            time.sleep(0.1)
        yield tuple(HostSpec(name=h.name, address=h.bind, port=PORT, user="pdfx", sudo=True,
                             identity=str(lab_dir / "keys" / "id_ed25519"),
                             known_hosts=str(lab_dir / "keys" / "known_hosts"))
                    for h in labs)  # type: ignore[misc]
    finally:
        left = kill_all(procs)
        sshd.revoke_sudo_user(lab_dir)
        assert not left


@pytest.fixture(scope="module")
def files(hosts: tuple[HostSpec, HostSpec]) -> Iterator[SshTransport]:
    t = SshTransport(hosts[0])
    t.connect(10.0)
    try:
        yield t
    finally:
        t.close()


@pytest.fixture(scope="module")
def share() -> Iterator[Path]:
    with shared_dir() as d:
        yield d


@pytest.fixture(scope="module")
def own_pid(files: SshTransport) -> Iterator[int]:
    """A process of the login user's (its environ is the login user's to read)."""
    r = files.run("start", ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], 10.0, 100)
    pid = int(r.stdout)
    yield pid
    files.run("stop", ["kill", str(pid)], 10.0, 100)


@pytest.mark.parametrize("name", FILE_SOURCES)
def test_every_file_collector_reads_what_its_command_prints(
        name: str, files: SshTransport, hosts: tuple[HostSpec, HostSpec], share: Path,
        own_pid: int) -> None:
    job = file_job(hosts[0], name, own_pid, share / "server.log")
    src = job.source
    assert job.read is not None
    read = files.read_file(name, job.read, src.timeout_s, src.max_bytes, tail=src.tail)
    assert read is not None and read.argv[0] == "read" and read.ok, read
    ran = files.run(name, job.argv, src.timeout_s, src.max_bytes)
    assert ran.ok, ran
    expected = ran.stdout
    if src.tail and len(expected) >= src.max_bytes:  # tail -c's window, from its first whole line
        expected = expected[expected.find(b"\n") + 1:]
    assert read.stdout == expected and read.stdout


def test_tail_window_starts_at_a_line_and_keeps_the_end(files: SshTransport, share: Path) -> None:
    text = (share / "server.log").read_bytes()
    r = files.read_file("log_file", str(share / "server.log"), 10.0, 1000, tail=True)
    assert r is not None and r.ok and not r.truncated
    assert text.endswith(r.stdout) and r.stdout.startswith(b"line ")
    assert text[len(text) - len(r.stdout) - 1:][:1] == b"\n" and 1000 - 30 < len(r.stdout) <= 1000


def test_cap_cuts_a_plain_read(files: SshTransport, share: Path) -> None:
    r = files.read_file("x", str(share / "server.log"), 10.0, 5000)
    assert r is not None and r.truncated and r.stdout == (share / "server.log").read_bytes()[:5000]


@pytest.mark.parametrize("path", ["fifo", "/dev/zero"])
def test_fifo_and_device_are_refused_at_once(files: SshTransport, share: Path, path: str) -> None:
    t0 = time.monotonic()
    r = files.read_file("x", str(share / path), 5.0, 1 << 20)
    assert r is not None and r.exit_status == 1 and r.stdout == b"" and not r.timed_out
    assert "not read" in r.stderr and time.monotonic() - t0 < 2.0
    after = files.read_file("x", str(share / "server.log"), 5.0, 10)  # the session still works
    assert after is not None and after.stdout == b"line 00000"


def test_a_file_growing_without_end_stops_at_cap_or_timeout(files: SshTransport) -> None:
    with growing_file() as path:
        capped = files.read_file("x", str(path), 10.0, 2 << 20)
        t0 = time.monotonic()
        timed = files.read_file("x", str(path), 1.5, 1 << 40)
        took = time.monotonic() - t0
    assert capped is not None and capped.truncated and len(capped.stdout) == 2 << 20
    assert timed is not None and took < 3.5
    assert timed.timed_out or timed.ok  # stopped at the deadline, or caught up with the writer


def test_no_subsystem_falls_back_to_one_command_for_all(hosts: tuple[HostSpec, HostSpec],
                                                        share: Path) -> None:
    bare = SshTransport(hosts[1])
    bare.connect(10.0)
    try:
        reads = FileReads(hosts[1])
        jobs = [file_job(hosts[1], "cgroup", pid, share / "server.log") for pid in (1, os.getpid())]
        assert reads.read(bare, jobs[0], 5.0) == (None, [jobs[0]])  # nothing else under way
        assert bare.read_refused is not None and "SFTP" in bare.read_refused
        assert len(reads.fallbacks) == 1 and "commands" in reads.fallbacks[0]
        done = reads.run_batch(bare, jobs, 5.0)  # what the capture runs instead: one command
        assert [j for j, _ in done] == jobs
        for (_, r), pid in zip(done, (1, os.getpid()), strict=True):
            assert r.ok and r.stdout == Path(f"/proc/{pid}/cgroup").read_bytes(), r
            assert r.argv[0] == "timeout" and "python3" in r.argv  # cgroup needs no sudo
        assert reads.fallbacks == [reads.fallbacks[0]]  # said once
    finally:
        bare.close()


def test_unreadable_privileged_file_goes_through_sudo(files: SshTransport,
                                                      hosts: tuple[HostSpec, HostSpec],
                                                      share: Path) -> None:
    reads = FileReads(hosts[0])
    me = os.getpid()  # this test runs as root: its environ is not the ops user's to read
    root_env = file_job(hosts[0], "environ", me, share / "server.log")
    plain = files.read_file("environ", f"/proc/{me}/environ", 5.0, 1 << 20)
    assert plain is not None and plain.exit_status == 1 and "Permission denied" in plain.stderr
    assert reads.read(files, root_env, 5.0) == (None, [root_env])  # sudo host + privileged
    assert root_env.argv[:2] == ("sudo", "-n")
    assert len(reads.fallbacks) == 1 and "sudo -n" in reads.fallbacks[0]
    # root's environ and a gone process's, in one `sudo -n` command, each with its own result
    gone = file_job(hosts[0], "environ", 4_000_000, share / "server.log")
    (j1, r1), (j2, r2) = reads.run_batch(files, [root_env, gone], 5.0)
    assert (j1, j2) == (root_env, gone) and r1.argv[:2] == ("sudo", "-n")
    assert r1.ok and r1.stdout == Path(f"/proc/{me}/environ").read_bytes()
    assert r2.exit_status == 1 and "No such file" in r2.stderr and r2.stdout == b""
    # an unprivileged source is not retried under sudo: the denial is the evidence
    secret = files.read_file("cgroup", str(share / "secret"), 5.0, 100)
    assert secret is not None and "Permission denied" in secret.stderr
