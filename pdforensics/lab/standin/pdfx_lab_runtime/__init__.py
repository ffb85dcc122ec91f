"""Glue shared by the lab's stand-in processes: lab dir, fault file, rank state files."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
from datetime import datetime, timedelta

LAB_DIR_ENV = "PDFX_LAB_DIR"
LAB_HOST_ENV = "PDFX_LAB_HOST"


def lab_dir() -> str:
    return os.environ.get(LAB_DIR_ENV, "/tmp/pdfx-lab")


def current_fault() -> str:
    """The fault the lab is in now (the file is rewritten atomically by set_fault)."""
    try:
        with open(os.path.join(lab_dir(), "fault")) as fh:
            return fh.read().strip() or "healthy"
    except OSError:
        return "healthy"


def state_path(role: str, rank: int) -> str:
    return os.path.join(lab_dir(), "run", role, f"rank{rank}.json")


def write_state(role: str, rank: int, state: dict) -> None:
    """Atomically publish one rank's metric state (the HTTP process and nvidia-smi read it)."""
    path = state_path(role, rank)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh)
    os.replace(tmp, path)


def read_state(role: str, rank: int) -> dict | None:
    try:
        with open(state_path(role, rank)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG(SIGKILL): a child dies when the server that forked it dies."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except OSError:
        pass
    if os.getppid() != parent or parent == 1:
        os._exit(0)


def clock_shift_s() -> float:
    """Seconds this host's clock runs ahead under the lab's clock-skew fault: the libfaketime
    file its sshd sessions read (pdforensics/lab/clock.py), `+90`; 0 when there is none."""
    path = os.path.join(lab_dir(), f"faketime-{os.environ.get(LAB_HOST_ENV, '')}")
    try:
        with open(path) as fh:
            return float(fh.read().strip().rstrip("s") or 0)
    except (OSError, ValueError):
        return 0.0


def log(tag: str, msg: str) -> None:
    """One SGLang-style log line on stderr: `[2026-12-02 10:20:28 TP0] msg`, stamped on this
    host's clock (shifted under clock-skew)."""
    stamp = (datetime.now() + timedelta(seconds=clock_shift_s())).strftime("%Y-%m-%d %H:%M:%S")
    prefix = f"[{stamp} {tag}] " if tag else f"[{stamp}] "
    sys.stderr.write(prefix + msg + "\n")
    sys.stderr.flush()


def planted() -> dict:
    """Secrets a test planted for this lab (lab_up secret_log / secret_labels); {} if none."""
    try:
        with open(os.path.join(lab_dir(), "planted.json")) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def log_planted(tag: str) -> None:
    """Log the planted lines, as a server that echoes its config or a request would."""
    for line in planted().get("log", []):
        log(tag, str(line))


def sleep_until_fault_changes(fault: str, seconds: float) -> bool:
    """Sleep up to `seconds` in 0.1 s steps; True when the fault changed meanwhile."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.1)
        if current_fault() != fault:
            return True
    return current_fault() != fault


def titles_enabled() -> bool:
    """False when the lab runs as SGLang without setproctitle (lab_up titles=False)."""
    return os.environ.get("PDFX_LAB_TITLES", "1") != "0"


def set_title(title: str) -> None:
    """setproctitle(title), as SGLang does, unless titles are off or setproctitle is missing."""
    if not titles_enabled():
        return
    try:
        from setproctitle import setproctitle
    except ImportError:
        return
    setproctitle(title)
