"""Tools for the fault matrix: cluster-file variants, hostile loopback servers, the CLI as a
subprocess, and a check that no remote command outlived the capture."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CLI = [sys.executable, "-m", "pdforensics.cli"]


# -- cluster files ---------------------------------------------------------------------------
def read_cluster(path: Path) -> dict[str, Any]:
    data = tomllib.loads(path.read_text())
    base = path.parent
    for h in data["hosts"]:  # make relative key paths absolute so copies can live anywhere
        for key in ("identity", "known_hosts"):
            if key in h and not os.path.isabs(h[key]):
                h[key] = str(base / h[key])
    return data


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    return json.dumps(str(v))


def write_cluster(data: dict[str, Any], path: Path) -> Path:
    """A TOML writer for the cluster file's shape: [cluster], [[hosts]], [[hosts.services]]."""
    lines = ["[cluster]", *(f"{k} = {_value(v)}" for k, v in data["cluster"].items()), ""]
    for h in data["hosts"]:
        lines.append("[[hosts]]")
        lines += [f"{k} = {_value(v)}" for k, v in h.items() if k != "services"]
        lines.append("")
        for s in h.get("services", []):
            lines.append("[[hosts.services]]")
            lines += [f"{k} = {_value(v)}" for k, v in s.items()]
            lines.append("")
    path.write_text("\n".join(lines))
    return path


def host(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(h for h in data["hosts"] if h["name"] == name)


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


# -- running the CLI -------------------------------------------------------------------------
@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    bundle: Path | None
    signalled_s: float | None = None  # when the signal was sent, counted like wall_s

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def manifest(self) -> dict[str, Any]:
        assert self.bundle is not None, self.output
        return json.loads((self.bundle / "manifest.json").read_text())

    def results(self, **match: Any) -> list[dict[str, Any]]:
        rows = self.manifest()["results"]
        return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def newest_bundle(out: Path) -> Path | None:
    found = sorted((p for p in out.iterdir() if p.is_dir() and (p / "manifest.json").exists()),
                   key=lambda p: p.stat().st_mtime) if out.exists() else []
    return found[-1] if found else None


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def capture(cluster: Path, out: Path, *extra: str, signal_after: tuple[int, float] | None = None,
            timeout: float = 120, signal_when: Callable[[], bool] | None = None) -> Run:
    """`pdforensics capture` as a real process; optionally signal it after a delay, counted
    from when `signal_when()` first holds (from the start without it: a loaded machine may
    still be importing after a fixed delay)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    # SIGINT as an interactive Ctrl-C leaves it: a test run started in the background by a
    # non-interactive shell inherits SIGINT ignored, and Python then installs no handler
    proc = subprocess.Popen([*CLI, "capture", "-c", str(cluster), "-o", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint)
    sent: list[float] = []
    if signal_after is not None:
        sig, delay = signal_after

        def send() -> None:
            while signal_when is not None and not signal_when() and proc.poll() is None:
                time.sleep(0.05)
            time.sleep(delay)
            if proc.poll() is None:
                sent.append(time.monotonic() - t0)
                proc.send_signal(sig)

        threading.Thread(target=send, daemon=True).start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"capture still running after {timeout}s:\n{stdout}\n{stderr}") from None
    return Run(proc.returncode, stdout, stderr, time.monotonic() - t0, newest_bundle(out),
               sent[0] if sent else None)


def no_traceback(run: Run) -> None:
    assert "Traceback" not in run.output, run.output


# -- hostile servers -------------------------------------------------------------------------
class Server:
    """A loopback TCP server whose per-connection behaviour is a function; stopped on close()."""

    def __init__(self, address: str, port: int, handle: Callable[[socket.socket, threading.Event], None]):
        self.sock = socket.create_server((address, port), reuse_port=False)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.handle = handle
        self.conns: list[socket.socket] = []
        self.requests = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.requests += 1
            self.conns.append(conn)
            threading.Thread(target=self.handle, args=(conn, self.stop), daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def silent(conn: socket.socket, stop: threading.Event) -> None:
    """Accept, read nothing useful, answer nothing."""
    stop.wait(120)


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    """Answer an HTTP request with its headers, then the body one byte a second."""
    body = b"sglang:num_running_reqs 1\n" * 50
    try:
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(len(body)):
            if stop.wait(1.0):
                return
            conn.sendall(body[i:i + 1])
    except OSError:
        return


def http_body(payload: bytes) -> Callable[[socket.socket, threading.Event], None]:
    def handle(conn: socket.socket, stop: threading.Event) -> None:
        try:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(payload) + payload)
        except OSError:
            pass
        finally:
            conn.close()
    return handle


# -- the remote side after a capture ---------------------------------------------------------
def strays(markers: list[str], known: frozenset[int] = frozenset()) -> list[str]:
    """Processes (over SSH this is the same machine) whose args carry one of the markers,
    other than the lab's own (`known`)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    me = os.getpid()
    rows = []
    for line in out.splitlines()[1:]:
        pid, _, args = line.strip().partition(" ")
        if int(pid) in known or int(pid) == me or "ps -eo" in args:
            continue
        if any(m in args for m in markers):
            rows.append(line.strip())
    return rows


def wait_no_strays(markers: list[str], known: frozenset[int] = frozenset(), within_s: float = 12.0) -> float:
    """Seconds until no stray is left (remote `timeout -k 2` bounds every command)."""
    t0 = time.monotonic()
    while True:
        left = strays(markers, known)
        if not left:
            return time.monotonic() - t0
        if time.monotonic() - t0 > within_s:
            raise AssertionError("remote commands outlived the capture:\n" + "\n".join(left))
        time.sleep(0.5)


@dataclass
class Matrix:
    """Rows for docs/reliability.md, written as JSON next to the other test artifacts."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, fault: str, run: Run, sees: str, holds: str, strays_s: float | None = None) -> None:
        self.rows.append({"fault": fault, "exit": run.rc, "end_s": round(run.wall_s, 1),
                          "sees": sees, "holds": holds, "strays_gone_s": strays_s})

    def write(self, path: Path) -> None:
        """Merge into the artifact: a row replaces the earlier row of its fault, new faults are
        appended, so the matrix modules can run one at a time (short locked runs)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            rows = json.loads(path.read_text())
        except (OSError, ValueError):
            rows = []
        mine = {r["fault"]: r for r in self.rows}
        merged = [mine.pop(r["fault"], r) for r in rows if isinstance(r, dict) and "fault" in r]
        merged += [r for r in self.rows if r["fault"] in mine]
        path.write_text(json.dumps(merged, indent=1))


def kill_tree(pid: int) -> None:
    """SIGKILL a process and everything under it (an sshd and its connection children)."""
    import psutil

    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    for p in [*root.children(recursive=True), root]:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass


def have(tool: str) -> bool:
    return shutil.which(tool) is not None
