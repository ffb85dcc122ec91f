"""Start lab processes detached, find every process of a lab, and stop them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from pdforensics.errors import PdforensicsError

LAB_DIR_ENV = "PDFX_LAB_DIR"


def spawn(argv: Sequence[str], env: Mapping[str, str], log_file: Path, cwd: Path) -> psutil.Process:
    """Start argv in its own session (it outlives the caller); stdout+stderr go to log_file."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=str(cwd),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return psutil.Process(proc.pid)


def check_port_free(address: str, port: int) -> None:
    """Raise a one-line PdforensicsError when (address, port) cannot be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            raise PdforensicsError(
                f"port {port} on {address} is in use ({exc.strerror}); stop the lab that holds it "
                "(`pdforensics lab down --dir ITS_DIR`, ./lab-run by default) or pass --base-port"
            ) from None


def _same(pid: int, create_time: float | None) -> psutil.Process | None:
    try:
        proc = psutil.Process(pid)
        if create_time is not None and abs(proc.create_time() - create_time) > 0.05:
            return None
        return proc
    except psutil.Error:
        return None


def find_lab_processes(lab_dir: Path, recorded: Mapping[str, tuple[int, float]]) -> list[psutil.Process]:
    """Recorded roots, their descendants, and any process whose environment names lab_dir."""
    found: dict[int, psutil.Process] = {}
    for pid, ctime in recorded.values():
        proc = _same(pid, ctime)
        if proc is None:
            continue
        found[proc.pid] = proc
        try:
            for child in proc.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
    target = str(lab_dir)
    sshd_conf = str(lab_dir / "sshd") + os.sep
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if proc.pid in found or proc.pid == me:
            continue
        try:
            cmdline = proc.info["cmdline"] or []
            if any(arg.startswith(sshd_conf) for arg in cmdline):
                found[proc.pid] = proc
                continue
            if proc.environ().get(LAB_DIR_ENV) == target:
                found[proc.pid] = proc
        except psutil.Error:
            continue
    return list(found.values())


def kill_all(procs: list[psutil.Process], grace_s: float = 3.0) -> list[psutil.Process]:
    """SIGTERM, wait, SIGKILL what is left; returns the processes still alive after that."""
    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(alive, timeout=grace_s)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def wait_until(check: object, timeout_s: float, interval_s: float = 0.1) -> bool:
    """Poll check() (a callable returning bool) until it is true or timeout_s passes."""
    assert callable(check)
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(interval_s)
    return bool(check())
