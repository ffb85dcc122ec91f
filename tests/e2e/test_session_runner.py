"""The session runner over a real sshd: every command and file read of a host goes through one
exec channel, and each gives what its own exec channel (or SFTP read) gives: output, exit status,
stderr, caps, timeouts, signals. On a sudo host the runner starts under `sudo -n` once; where
sudo refuses that, it runs as the login user. A host where the runner cannot start, or where it
dies mid-capture, falls back to one channel per command."""

from __future__ import annotations

import dataclasses
import os
import pwd
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pdforensics.collectors.base import REGISTRY
from pdforensics.lab import sshd
from pdforensics.lab.layout import LabHost
from pdforensics.lab.procs import kill_all, spawn
from pdforensics.model import HostSpec
from pdforensics.transport.base import remote_argv
from pdforensics.transport.ssh import SshTransport
from tests.support import ports
from tests.support.file_reads import file_job, growing_file, shared_dir

pytestmark = pytest.mark.lab

ADDRESS = "127.0.1.203"
PORT = ports.port((ADDRESS,))
FILE_SOURCES = sorted(name for name, s in REGISTRY.items() if s.reads is not None)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSpec]:
    """A stock sshd logging in the lab's ops user (sudo = true)."""
    lab_dir = tmp_path_factory.mktemp("runner-sshd")
    labs = (LabHost("runner", "decode", ADDRESS, ADDRESS, ()),)
    sshd.prepare(lab_dir, labs, PORT)
    sshd.ensure_sudo_user("pdfx", lab_dir)
    procs = [spawn(sshd.sshd_argv(lab_dir, h), dict(os.environ), lab_dir / f"{h.name}.log", lab_dir)
             for h in labs]
    try:
        end = time.monotonic() + 20
        while not sshd.banner_ready(ADDRESS, PORT):
            assert time.monotonic() < end, (lab_dir / "runner.log").read_text()
            time.sleep(0.1)
        yield HostSpec(name="runner", address=ADDRESS, port=PORT, user="pdfx", sudo=True,
                       identity=str(lab_dir / "keys" / "id_ed25519"),
                       known_hosts=str(lab_dir / "keys" / "known_hosts"))
    finally:
        left = kill_all(procs)
        sshd.revoke_sudo_user(lab_dir)
        assert not left


def _connect(host: HostSpec, runner: bool) -> SshTransport:
    t = SshTransport(host, runner=runner)
    t.connect(10.0)
    return t


@pytest.fixture(scope="module")
def both(host: HostSpec) -> Iterator[tuple[SshTransport, SshTransport]]:
    """(through the login user's runner, one exec channel per command) on the same host."""
    ran = _connect(dataclasses.replace(host, runner_sudo=False), True)
    plain = _connect(host, False)
    try:
        yield ran, plain
    finally:
        ran.close()
        plain.close()


@pytest.fixture(scope="module")
def share() -> Iterator[Path]:
    with shared_dir() as d:
        yield d


COMMANDS = [
    ("printf", "hello\\n"),
    ("sh", "-c", "echo out; echo err >&2; exit 3"),
    ("printf", "%b", "\\xff\\xfe non-utf8 \\x1b[31m"),
    ("timeout", "-k", "2", "5", "no-such-command-pdfx"),
    ("sh", "-c", "cat /proc/self/status | grep -c ."),
    ("sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x"),
    ("sudo", "-n", "cat", "/proc/1/environ"),
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a)[:30])
def test_a_command_gives_what_its_own_channel_gives(
        both: tuple[SshTransport, SshTransport], argv: tuple[str, ...]) -> None:
    ran, plain = both
    a = ran.run("x", argv, 10.0, 1 << 20)
    b = plain.run("x", argv, 10.0, 1 << 20)
    assert a.argv == b.argv == argv
    assert (a.exit_status, a.stdout, a.truncated, a.timed_out, a.error) == \
           (b.exit_status, b.stdout, b.truncated, b.timed_out, b.error)
    if argv[0] != "timeout":  # the runner execs timeout itself: no "bash: line 1:" prefix
        assert a.stderr == b.stderr


def test_commands_share_one_session(both: tuple[SshTransport, SshTransport]) -> None:
    """Every command's parent is the same runner process: the login shell ran once."""
    ran, _ = both
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: ran.run("x", ("sh", "-c", "echo $PPID"), 10.0, 100),
                                range(24)))
    parents = {int(r.stdout) for r in results if r.ok}
    assert len(parents) == 1 and all(r.ok for r in results)
    runner_cmd = Path(f"/proc/{parents.pop()}/cmdline").read_bytes().split(b"\0")
    assert runner_cmd[:3] == [b"python3", b"-I", b"-S"]


def test_cap_cuts_and_stops_the_command(both: tuple[SshTransport, SshTransport]) -> None:
    ran, _ = both
    t0 = time.monotonic()
    r = ran.run("x", remote_argv(("cat", "/dev/zero"), 20), 20, 100_000)
    assert r.truncated and len(r.stdout) == 100_000 and r.exit_status is None
    assert time.monotonic() - t0 < 5


def test_remote_timeout_and_local_deadline(both: tuple[SshTransport, SshTransport]) -> None:
    ran, _ = both
    r = ran.run("x", remote_argv(("sleep", "30"), 1), 1, 100)
    assert r.exit_status == 124 and r.duration_s < 3  # the host's `timeout` ended it
    t0 = time.monotonic()
    hung = ran.run("x", ("sleep", "30"), 1, 100)  # unwrapped: only the local deadline
    assert hung.timed_out and hung.exit_status is None and time.monotonic() - t0 < 6
    after = ran.run("x", ("printf", "ok"), 5, 100)  # the session is still usable
    assert after.ok and after.stdout == b"ok"


def test_a_signal_is_no_exit_status(both: tuple[SshTransport, SshTransport]) -> None:
    ran, plain = both
    a = ran.run("x", ("sh", "-c", "kill -KILL $$"), 5, 100)
    b = plain.run("x", ("sh", "-c", "kill -KILL $$"), 5, 100)
    assert a.exit_status is None and a.error and "signal" in a.error
    assert (b.exit_status, b.error) == (a.exit_status, a.error)


@pytest.mark.parametrize("name", FILE_SOURCES)
def test_every_file_collector_reads_what_sftp_reads(
        name: str, both: tuple[SshTransport, SshTransport], host: HostSpec,
        share: Path) -> None:
    ran, plain = both
    own = ran.run("start", ("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"), 10, 100)
    pid = int(own.stdout)
    try:
        job = file_job(host, name, pid, share / "server.log")
        src = job.source
        assert job.read is not None
        a = ran.read_file(name, job.read, src.timeout_s, src.max_bytes, tail=src.tail)
        b = plain.read_file(name, job.read, src.timeout_s, src.max_bytes, tail=src.tail)
    finally:
        ran.run("stop", ("kill", str(pid)), 10, 100)
    assert a is not None and b is not None and a.ok and b.ok, (a, b)
    assert a.argv == b.argv and a.argv[0] == "read"
    assert a.stdout == b.stdout and a.stdout and a.truncated == b.truncated


def test_reads_refuse_fifo_and_device_and_keep_caps(both: tuple[SshTransport, SshTransport],
                                                    share: Path) -> None:
    ran, _ = both
    for path in (str(share / "fifo"), "/dev/zero"):
        t0 = time.monotonic()
        r = ran.read_file("x", path, 30.0, 1 << 20)
        assert r is not None and r.exit_status == 1 and "not read" in r.stderr, r
        assert time.monotonic() - t0 < 10.0  # refused at once, not read until the 30 s timeout
    text = (share / "server.log").read_bytes()
    cut = ran.read_file("x", str(share / "server.log"), 5.0, 5000)
    assert cut is not None and cut.truncated and cut.stdout == text[:5000]
    tail = ran.read_file("x", str(share / "server.log"), 5.0, 1000, tail=True)
    assert tail is not None and tail.ok and text.endswith(tail.stdout)
    assert tail.stdout.startswith(b"line ") and 1000 - 30 < len(tail.stdout) <= 1000
    missing = ran.read_file("x", str(share / "nope"), 5.0, 100)
    assert missing is not None and missing.exit_status == 1 and "No such file" in missing.stderr
    denied = ran.read_file("x", f"/proc/{os.getpid()}/environ", 5.0, 100)  # root's, ops login
    assert denied is not None and "Permission denied" in denied.stderr


def test_a_file_growing_without_end_stops_at_the_cap(both: tuple[SshTransport, SshTransport]) -> None:
    ran, _ = both
    with growing_file() as path:
        capped = ran.read_file("x", str(path), 10.0, 2 << 20)
    assert capped is not None and capped.truncated and len(capped.stdout) == 2 << 20


def test_no_interpreter_falls_back_to_a_channel_per_command(host: HostSpec) -> None:
    t = SshTransport(host, runner=True)
    assert t.runner is not None
    t.runner.interpreter = "python3-not-on-this-host"
    t.connect(10.0)
    try:
        r = t.run("x", ("printf", "ok"), 5, 100)
        assert r.ok and r.stdout == b"ok"  # ran in its own exec channel
        assert t.runner.refused and "127" in t.runner.refused
    finally:
        t.close()


def test_a_runner_killed_mid_capture_ends_its_calls_and_later_ones_fall_back(host: HostSpec) -> None:
    t = _connect(host, True)
    try:
        parent = t.run("x", ("sh", "-c", "echo $PPID"), 5, 100)
        runner_pid = int(parent.stdout)
        box: dict[str, object] = {}
        waiting = threading.Thread(target=lambda: box.update(r=t.run("x", ("sleep", "20"), 30, 100)))
        waiting.start()
        time.sleep(0.5)
        os.kill(runner_pid, signal.SIGKILL)  # the host kills the runner (OOM killer, an admin)
        waiting.join(10)
        r = box["r"]
        assert not waiting.is_alive() and r.error and "runner" in r.error  # type: ignore[attr-defined]
        after = t.run("x", ("printf", "ok"), 5, 100)
        assert after.ok and after.stdout == b"ok"
        assert t.runner is not None and t.runner.refused and "mid-capture" in t.runner.refused
    finally:
        t.close()


def test_on_a_sudo_host_the_runner_starts_under_sudo_once(host: HostSpec) -> None:
    """One `sudo -n` for the session: commands run as root, their own `sudo -n` dropped from the
    argv the row shows; files the login user may not read are read."""
    t = _connect(host, True)
    try:
        plain = t.run("x", ("id", "-u"), 5, 100)
        dropped = t.run("x", ("sudo", "-n", "id", "-u"), 5, 100)
        parents = {t.run("x", ("sh", "-c", "echo $PPID"), 5, 100).stdout for _ in range(3)}
        environ = t.read_file("x", f"/proc/{os.getpid()}/environ", 5.0, 1 << 20)
        assert t.runner is not None
        said = t.runner.describe()
    finally:
        t.close()
    assert (plain.stdout, dropped.stdout, dropped.argv) == (b"0\n", b"0\n", ("id", "-u"))
    assert len(parents) == 1
    assert environ is not None and environ.ok and b"PATH=" in environ.stdout
    assert said and said.startswith("one exec channel: sudo -n timeout") and "as root" in said


RESTRICTED = "pdfxsudo1"


@pytest.fixture(scope="module")
def restricted(host: HostSpec, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSpec]:
    """A second ops user whose sudoers allow only `cat` (the runner's python3 is refused)."""
    lab_dir = tmp_path_factory.mktemp("restricted-sudo")
    shutil.copytree(Path(str(host.identity)).parent, lab_dir / "keys")
    try:
        pwd.getpwnam(RESTRICTED)
        pytest.fail(f"user {RESTRICTED} exists already: this test creates and removes it")
    except KeyError:
        pass
    grant = sshd.ensure_sudo_user(RESTRICTED, lab_dir)
    try:
        cat = shutil.which("cat")
        Path(grant.sudoers).write_text(f"{RESTRICTED} ALL=(root) NOPASSWD: {cat}\n")
        yield dataclasses.replace(host, user=RESTRICTED)
    finally:
        sshd.revoke_sudo_user(lab_dir)


def test_sudo_refusing_the_runner_starts_it_as_the_login_user(restricted: HostSpec) -> None:
    t = _connect(restricted, True)
    try:
        me = t.run("x", ("id", "-un"), 5, 100)
        own = t.run("x", ("sudo", "-n", "cat", f"/proc/{os.getpid()}/environ"), 5, 1 << 20)
        parents = {t.run("x", ("sh", "-c", "echo $PPID"), 5, 100).stdout for _ in range(3)}
        assert t.runner is not None
        said, root_refused, refused = t.runner.describe(), t.runner.root_refused, t.runner.refused
    finally:
        t.close()
    assert me.stdout == f"{RESTRICTED}\n".encode() and len(parents) == 1 and refused is None
    assert own.ok and own.argv[:2] == ("sudo", "-n") and b"PATH=" in own.stdout, own  # its own sudo
    assert root_refused and "exit 1" in root_refused and "sudo" in root_refused
    assert said and "as root it did not start" in said and not said.startswith("one exec channel: sudo")
