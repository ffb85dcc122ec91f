"""faulthandler parser on a real dump_traceback sample and on fatal-error dumps made by real Pythons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.faulthandler import parse_faulthandler

DATA = Path(__file__).resolve().parent.parent / "data"
PYENV = Path("/root/.pyenv/versions")
PYTHONS = [sys.executable] + sorted(str(p / "bin" / "python") for p in PYENV.glob("3.1[2-9]*")
                                    if (p / "bin" / "python").exists())[:2]

ABORT = """
import os, threading, time
def worker():
    time.sleep(30)
threading.Thread(target=worker, name="w1", daemon=True).start()
time.sleep(0.3)
os.abort()
"""

TIMEOUT = """
import faulthandler, time
faulthandler.dump_traceback_later(0.2, exit=True)
def deep(n):
    if n:
        return deep(n - 1)
    time.sleep(5)
deep(150)
"""


def test_dump_traceback_sample() -> None:
    d = parse_faulthandler((DATA / "faulthandler_threads.txt").read_text())
    assert d is not None and d.kind == "faulthandler"
    assert [t.thread_id for t in d.threads] == [
        "0x00007ff4c92976c0", "0x00007ff4c9a9c6c0", "0x00007ff4ca2a16c0", "0x00007ff4caaa66c0",
        "0x00007ff4cb893b80"]
    assert [t.current for t in d.threads] == [False] * 4 + [True]
    assert [t.leaf.function for t in d.threads if t.leaf] == [
        "unnamed_worker", "wait", "busy_worker", "sleeper", "main"]
    queue = d.threads[1]
    assert [f.function for f in queue.frames] == [
        "wait", "get", "queue_waiter", "run", "_bootstrap_inner", "_bootstrap"]
    assert queue.frames[0].file.endswith("/lib/python3.11/threading.py") and queue.frames[0].line == 327
    assert d.threads[-1].frames[-1].function == "<module>" and d.threads[-1].frames[-1].line == 102


@pytest.mark.parametrize("python", PYTHONS)
def test_fatal_error_from_a_real_interpreter(python: str) -> None:
    run = subprocess.run([python, "-X", "faulthandler", "-c", ABORT], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode != 0 and "Fatal Python error" in run.stderr
    d = parse_faulthandler(run.stderr)
    assert d is not None and len(d.threads) == 2
    worker, main = d.threads
    assert not worker.current and main.current
    assert [f.function for f in worker.frames][:2] == ["worker", "run"]
    assert worker.frames[0].file == "<string>" and worker.frames[0].line == 4
    assert [f.function for f in main.frames] == ["<module>"] and main.frames[0].line == 7


def test_fatal_error_with_extension_modules_trailer() -> None:
    code = "import psutil, setproctitle\n" + ABORT
    run = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert "Extension modules:" in run.stderr
    d = parse_faulthandler(run.stderr)
    assert d is not None and [len(t.frames) for t in d.threads][1] == 1
    assert all("Extension" not in f.function for t in d.threads for f in t.frames)


def test_timeout_dump_with_elided_frames() -> None:
    run = subprocess.run([sys.executable, "-c", TIMEOUT], capture_output=True, text=True, timeout=60)
    assert "Timeout (" in run.stderr and run.stderr.rstrip().endswith("...")
    d = parse_faulthandler(run.stderr)
    assert d is not None and len(d.threads) == 1
    frames = d.threads[0].frames
    assert frames[0].function == "deep" and len(frames) == 100  # faulthandler keeps 100 frames
    assert {f.function for f in frames} == {"deep"}


def test_empty_and_garbage() -> None:
    assert parse_faulthandler("") is None and parse_faulthandler(" \n") is None
    with pytest.raises(ParseError, match="no faulthandler thread header"):
        parse_faulthandler("Fatal Python error: Aborted\n\nnothing else\n")
