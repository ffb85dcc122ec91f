"""LocalTransport.read_file: the same caps, refusals and tail window as the SFTP reads."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from pdforensics.capture.planner import make_job
from pdforensics.collectors.base import REGISTRY, Target
from pdforensics.model import HostSpec, ProcessInfo
from pdforensics.sglang.discovery import Service
from pdforensics.transport.file_read import read_argv
from pdforensics.transport.local import LocalTransport

LOCAL = HostSpec(name="here", address="local")


def _lines(n: int) -> bytes:
    return b"".join(b"entry %05d token=abc\n" % i for i in range(n))


def test_every_file_collector_reads_what_its_command_prints(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(_lines(50))
    proc = ProcessInfo(pid=os.getpid(), ppid=1, state="S", start_epoch=None, threads=1,
                       rss_kb=0, args="python3", kind="server")
    svc = Service(role="decode", kind="server", port=1, address="127.0.0.1", root_pid=proc.pid,
                  pids=(proc.pid,), metrics_port=None, unit=None, log_file=str(log), declared=True)
    t = LocalTransport(LOCAL)
    names = sorted(n for n, s in REGISTRY.items() if s.reads is not None)
    assert {"cmdline", "environ", "cgroup", "log_file", "flight_recorder"} <= set(names)
    for name in names:  # a Flight Recorder read names its file in the target's path
        job = make_job(LOCAL, REGISTRY[name], Target(process=proc, service=svc, path=str(log)))
        assert job.read is not None
        read = t.read_file(name, job.read, 5.0, job.source.max_bytes, tail=job.source.tail)
        ran = t.run(name, job.argv, 5.0, job.source.max_bytes)
        assert read is not None and read.ok and ran.ok, (read, ran)
        assert read.stdout == ran.stdout and read.stdout, name
        assert read.argv == read_argv(job.read, job.source.tail)


def test_tail_keeps_the_end_from_a_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "log"
    text = _lines(1000)
    path.write_bytes(text)
    r = LocalTransport(LOCAL).read_file("log_file", str(path), 5.0, 500, tail=True)
    assert r is not None and r.ok and not r.truncated
    assert text.endswith(r.stdout) and r.stdout.startswith(b"entry ") and len(r.stdout) <= 500
    assert text[-len(r.stdout) - 1:-len(r.stdout)] == b"\n"
    small = LocalTransport(LOCAL).read_file("log_file", str(path), 5.0, 1 << 20, tail=True)
    assert small is not None and small.stdout == text  # the whole file fits: nothing dropped


def test_window_on_a_line_start_keeps_that_line(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"aaaa\nbbbb\n")
    r = LocalTransport(LOCAL).read_file("log_file", str(path), 5.0, 5, tail=True)
    assert r is not None and r.stdout == b"bbbb\n"


def test_cap_truncates_a_plain_read(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"z" * 10_000)
    r = LocalTransport(LOCAL).read_file("x", str(path), 5.0, 1000)
    assert r is not None and r.truncated and r.stdout == b"z" * 1000 and r.exit_status is None


def test_fifo_and_dev_zero_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    for path, kind in ((str(fifo), "FIFO"), ("/dev/zero", "character device")):
        r = LocalTransport(LOCAL).read_file("x", path, 5.0, 1 << 30)
        assert r is not None and r.exit_status == 1 and kind in r.stderr and r.stdout == b""
    assert time.monotonic() - t0 < 1.0


def test_missing_file_is_data(tmp_path: Path) -> None:
    r = LocalTransport(LOCAL).read_file("cmdline", str(tmp_path / "nope"), 5.0, 100)
    assert r is not None and r.exit_status == 1 and "No such file" in r.stderr and not r.ok


def test_growing_file_stops_at_the_cap(tmp_path: Path) -> None:
    path, stop = tmp_path / "grow", threading.Event()
    path.write_bytes(b"")

    def grow() -> None:
        with path.open("ab") as f:
            while not stop.is_set():
                f.write(b"y" * 65536)

    writer = threading.Thread(target=grow, daemon=True)
    writer.start()
    try:
        time.sleep(0.05)
        r = LocalTransport(LOCAL).read_file("x", str(path), 3.0, 1 << 20)
    finally:
        stop.set()
        writer.join()
    assert r is not None and len(r.stdout) <= 1 << 20 and r.duration_s < 3.5
    assert r.truncated or r.ok
