"""Real tools on a real process: gdb's `thread apply all bt` and `py-spy top` (in a tmux pane:
it refuses to run without a terminal) against the blocked program the field corpus was made
with (a thread in recv, one on a lock, a heartbeat, the main thread asleep). The readers must
read what the tools print today, not only the stored copies."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.stacks_load import parse_stack_text, sniff_format
from pdforensics.parsers.pyspy_top import parse_pyspy_top
from pdforensics.triage.read import read_text

PYSPY = Path(sys.executable).parent / "py-spy"
# /work/coord/gen/blocked.py, the program the field corpus's gen-gdb13-* and gen-pyspy043-top-*
# artifacts were taken from (GENERATED.md), function names kept
BLOCKED = """
import socket
import threading
import time

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
cli = socket.create_connection(srv.getsockname())
conn, _ = srv.accept()
lock = threading.Lock()
lock.acquire()


def wait_for_kv():
    conn.recv(4096)            # peer never sends


def transfer_worker():
    with lock:                 # never released
        pass


def heartbeat():
    while True:
        time.sleep(5)


threading.Thread(target=wait_for_kv, name="kv-recv").start()
threading.Thread(target=transfer_worker, name="transfer-worker").start()
threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
time.sleep(600)
"""


@pytest.fixture
def blocked(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    prog = tmp_path / "blocked.py"
    prog.write_text(BLOCKED)
    proc = subprocess.Popen([sys.executable, str(prog)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while time.time() < deadline and len(list(Path(f"/proc/{proc.pid}/task").iterdir())) < 4:
            time.sleep(0.1)
        time.sleep(0.3)
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb not installed")
def test_real_gdb_thread_apply_all_bt(blocked: subprocess.Popen[bytes]) -> None:
    out = subprocess.run(["timeout", "60", "gdb", "-p", str(blocked.pid), "-batch", "-nx",
                          "-ex", "thread apply all bt"], capture_output=True, text=True).stdout
    assert sniff_format(out) == "gdb", out[:500]
    (dump,) = parse_stack_text(out)
    assert dump.kind == "gdb" and len(dump.threads) == 4
    assert {t.thread_id for t in dump.threads} == {f"LWP {p.name}" for p in
                                                   Path(f"/proc/{blocked.pid}/task").iterdir()}
    fns = [f.function for t in dump.threads for f in t.frames]
    assert any("recv" in fn for fn in fns) and any("sem_wait" in fn or "futex" in fn for fn in fns)
    art = read_text("gdb.txt", out, len(out))
    assert art.kind == "stacks" and art.threads == 4 and art.error is None


@pytest.mark.skipif(shutil.which("tmux") is None or not PYSPY.exists(), reason="tmux or py-spy missing")
def test_real_pyspy_top_in_a_terminal(blocked: subprocess.Popen[bytes]) -> None:
    session = f"pdf-top-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "30",
                    f"{PYSPY} top --nonblocking --idle --pid {blocked.pid}"], check=True)
    try:
        screen = ""
        deadline = time.time() + 30
        while time.time() < deadline:
            time.sleep(1.0)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True).stdout
            top = parse_pyspy_top(screen)
            if top is not None and top.samples and top.rows:
                break
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    top = parse_pyspy_top(screen)
    assert top is not None, screen
    assert top.threads == 4 and top.idle and top.samples and top.samples > 0
    assert {r.function for r in top.rows} >= {"wait_for_kv (blocked.py)", "transfer_worker (blocked.py)"}
    assert read_text("top.txt", screen, len(screen)).kind == "pyspy_top"
