"""What the file-read tests over real sshd share: a directory the ops user can read, a file
that grows without end, and a file-read job of any collector against a given process."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pdforensics.capture.planner import make_job
from pdforensics.collectors.base import REGISTRY, Job, Target
from pdforensics.model import HostSpec, ProcessInfo
from pdforensics.sglang.discovery import Service


@contextmanager
def shared_dir() -> Iterator[Path]:
    """A directory the ops user can read, with a 20000-line log, a FIFO and a root-only file."""
    d = Path(tempfile.mkdtemp(prefix="pdfx-files-"))
    os.chmod(d, 0o755)
    log = d / "server.log"
    log.write_bytes(b"".join(b"line %06d Bearer abc%d\n" % (i, i) for i in range(20000)))
    os.chmod(log, 0o644)
    os.mkfifo(d / "fifo")
    os.chmod(d / "fifo", 0o666)  # mkfifo's mode passes through the umask (077 in CI)
    (d / "secret").write_bytes(b"root only\n")
    os.chmod(d / "secret", 0o600)
    try:
        yield d
    finally:
        shutil.rmtree(d)


@contextmanager
def growing_file(past: int = 3 << 20) -> Iterator[Path]:
    """A world-readable file that a thread keeps appending to until the block ends.

    The block starts once the file has passed `past` bytes, so a reader with a smaller cap
    meets the cap whether or not the writer gets the CPU while it reads (on a loaded 2-core
    CI the reader once reached the end of a 100 KB file before the writer ran at all)."""
    d = Path(tempfile.mkdtemp(prefix="pdfx-grow-"))
    os.chmod(d, 0o755)
    path, stop, grown = d / "grow.log", threading.Event(), threading.Event()
    path.write_bytes(b"x" * 100_000)
    os.chmod(path, 0o644)

    def grow() -> None:
        with path.open("ab") as f:
            while not stop.is_set():
                f.write(b"y" * 65536)
                f.flush()
                if f.tell() > past:
                    grown.set()

    writer = threading.Thread(target=grow, daemon=True)
    writer.start()
    try:
        assert grown.wait(30), "the writer never grew the file"
        yield path
    finally:
        stop.set()
        writer.join()
        shutil.rmtree(d)


def file_job(host: HostSpec, name: str, pid: int, log: Path) -> Job:
    """The job of file-read source `name` against process pid (its service logs to `log`)."""
    proc = ProcessInfo(pid=pid, ppid=1, state="S", start_epoch=None, threads=1, rss_kb=0,
                       args="sleep 60", kind="server")
    svc = Service(role="decode", kind="server", port=1, address="127.0.0.1", root_pid=pid,
                  pids=(pid,), metrics_port=None, unit=None, log_file=str(log), declared=True)
    # a path-named source (a Flight Recorder dump) reads the same file
    return make_job(host, REGISTRY[name], Target(process=proc, service=svc, path=str(log)))
