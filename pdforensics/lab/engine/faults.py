"""Faults of the real engine lab, made the real way: signals to SGLang's own processes, load
through smg, and SGLang's own test endpoint (/slow_down). No code of ours runs inside SGLang.

Each switch returns once its fault shows (a log line, a gauge), so a capture taken right after
sees it. rank-stopped, forgotten-requests, prefill-frozen and kv-full are undone by `healthy`;
watchdog, server-killed and breaker-open end a server (SGLang's launcher tears it down), so the
lab needs `lab down` + `lab up` after them."""

from __future__ import annotations

import os
import signal
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pdforensics.errors import PdforensicsError
from pdforensics.lab.engine.launch import PD_TIMEOUT_S, WATCHDOG_S, tool_argv
from pdforensics.lab.engine.up import post_json, routes_16_tokens, save_record
from pdforensics.lab.faults import ENGINE_FAULTS
from pdforensics.lab.layout import STANDIN_DIR, paths
from pdforensics.lab.procs import LAB_DIR_ENV, spawn

FINAL = ("watchdog", "server-killed", "breaker-open")  # a server is gone afterwards
# (from, to): the second is the first seen later (SGLang's timeout lines; smg's breakers opening)
FOLLOWS = {("forgotten-requests", "prefill-frozen"), ("server-killed", "breaker-open")}
# load: seconds, concurrency, new tokens, prompt words, client timeout
LOADS: dict[str, tuple[int, int, int, int, int]] = {
    "rank-stopped": (90, 2, 16, 6, 60),
    "forgotten-requests": (150, 4, 16, 6, 150),
    "kv-full": (300, 5, 1400, 420, 240),  # ~600 prompt + 1400 new tokens each (2048 max): 3 outgrow 4096
    "watchdog": (20, 1, 16, 6, 240),
    "breaker-open": (120, 2, 16, 6, 30),
}


class _Lab:
    """A running engine lab, read from its lab.json."""

    def __init__(self, lab_dir: Path, record: dict[str, Any]) -> None:
        self.dir, self.record = lab_dir, record
        binds = {h["role"]: h["bind"] for h in record["hosts"]}
        ports = record["ports"]
        self.url = {"prefill": f"http://{binds['prefill']}:{ports['prefill']}",
                    "decode": f"http://{binds['decode']}:{ports['decode']}",
                    "router": f"http://{binds['router']}:{ports['router']}"}
        self.router_metrics = f"http://{binds['router']}:{ports['router_metrics']}/metrics"

    def server(self, role: str) -> psutil.Process | None:
        pid, ctime = self.record["pids"].get(role, (0, 0.0))
        try:
            proc = psutil.Process(int(pid))
            if abs(proc.create_time() - float(ctime)) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE:
                return proc
        except psutil.Error:
            pass
        return None

    def scheduler(self, role: str) -> psutil.Process:
        """The role's last scheduler rank (TP1 at TP 2; the only one, `sglang::scheduler`, at TP 1)."""
        server = self.server(role)
        ranks = []
        for child in server.children() if server else []:
            try:
                title = " ".join(child.cmdline()).strip()
            except psutil.Error:
                continue
            if title.startswith("sglang::scheduler"):
                ranks.append((title, child))
        if not ranks:
            raise PdforensicsError(f"engine lab: the {role} server has no scheduler process (is it running?)")
        return sorted(ranks, key=lambda r: r[0])[-1][1]

    def log_size(self, role: str) -> int:
        try:
            return (self.dir / "logs" / f"{role}.log").stat().st_size
        except OSError:
            return 0

    def log_since(self, role: str, offset: int) -> str:
        try:
            with open(self.dir / "logs" / f"{role}.log", "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def start_load(self, fault: str) -> None:
        secs, conc, new, words, tmo = LOADS[fault]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PDFX_"))}
        env.update({"PYTHONPATH": str(STANDIN_DIR), LAB_DIR_ENV: str(self.dir)})
        proc = spawn(tool_argv(sys.executable, "load", [self.url["router"], str(secs), str(conc), str(new),
                                                        str(words), str(tmo)]),
                     env, self.dir / "logs" / f"load-{fault}.log", self.dir)
        save_record(self.dir, self.record, {f"load:{fault}": proc})

    def stop_loads(self) -> None:
        for name in [n for n in self.record["pids"] if n.startswith("load:")]:
            pid, ctime = self.record["pids"].pop(name)
            try:
                proc = psutil.Process(int(pid))
                if abs(proc.create_time() - float(ctime)) < 0.05:
                    proc.kill()
                    proc.wait(5)
            except psutil.Error:
                pass
        save_record(self.dir, self.record, {})


def metric(url: str, name: str, label: str = "") -> float | None:
    """Sum of the samples of `name` (whose labels contain `label`) on a /metrics page."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode(errors="replace")
    except OSError:
        return None
    found = [value for labels, value in (_sample(line, name) for line in text.splitlines())
             if value is not None and label in labels]
    return sum(found) if found else None


def _sample(line: str, name: str) -> tuple[str, float | None]:
    """(labels, value) of a sample line of `name`, or ("", None) for any other line."""
    rest = line[len(name):] if line.startswith(name) else ""
    labels = rest[:rest.find("}") + 1] if rest.startswith("{") else ""
    parts = rest[len(labels):].split()
    if not rest or not rest[len(labels):].startswith(" ") or len(parts) != 1:
        return "", None
    try:
        return labels, float(parts[0])
    except ValueError:
        return "", None


def _until(what: str, check: Callable[[], bool], timeout_s: float) -> float:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout_s:
            raise PdforensicsError(f"engine lab: {what} did not happen within {timeout_s:.0f} s")
        time.sleep(1.0)
    return time.monotonic() - t0


def _generate_active(lab: _Lab, role: str) -> float:
    return metric(lab.url[role] + "/metrics", "sglang:http_requests_active", 'endpoint="/generate"') or 0.0


def _generated(lab: _Lab) -> float:
    return metric(lab.url["decode"] + "/metrics", "sglang:generation_tokens_total") or 0.0


def _stop(lab: _Lab, role: str) -> psutil.Process:
    rank = lab.scheduler(role)
    rank.send_signal(signal.SIGSTOP)
    return rank


def _kill_scheduler(lab: _Lab, role: str) -> None:
    launcher = lab.server(role)
    if launcher is None:
        return
    lab.scheduler(role).send_signal(signal.SIGKILL)
    # SGLang's subprocess watchdog sees the rank die and tears the whole server down (~6 s)
    _until(f"{role} launcher exit after its scheduler was killed", lambda: not launcher.is_running()
           or launcher.status() == psutil.STATUS_ZOMBIE, 60)


def heal(lab: _Lab) -> None:
    """Back to healthy: loads stopped, stopped processes continued, /slow_down off, one request
    through smg again."""
    lab.stop_loads()
    for role in ("prefill", "decode"):
        server = lab.server(role)
        if server is None:
            raise PdforensicsError(f"engine lab: the {role} server is gone (a final fault ended it): "
                                   "`pdforensics lab down`, then `lab up --engine sglang`")
        for proc in [server, *server.children(recursive=True)]:
            try:
                if proc.status() == psutil.STATUS_STOPPED:
                    proc.send_signal(signal.SIGCONT)
            except psutil.Error:
                pass
    try:
        post_json(lab.url["decode"] + "/slow_down", {"forward_sleep_time": None}, timeout=30)
    except OSError:
        pass
    _until("a request through smg", lambda: routes_16_tokens(lab.url["router"]), 240)


def apply_fault(lab: _Lab, fault: str) -> None:
    """Switch one fault on; returns once it shows."""
    if fault == "rank-stopped":
        lab.start_load(fault)
        first = _generated(lab)
        _until("decode progress under load", lambda: _generated(lab) > first, 60)
        _stop(lab, "decode")
        _until("a request held at the stopped decode", lambda: _generate_active(lab, "decode") >= 1, 60)
    elif fault in ("forgotten-requests", "prefill-frozen"):
        offset = int(lab.record.get("decode_log_offset", 0))
        if lab.scheduler("prefill").status() != psutil.STATUS_STOPPED:
            _stop(lab, "prefill")
            lab.start_load("forgotten-requests")
        _until("requests waiting at decode", lambda: _generate_active(lab, "decode") >= 2, 60)
        if fault == "prefill-frozen":
            _until("SGLang's 'Decode transfer failed' line",
                   lambda: "Decode transfer failed" in lab.log_since("decode", offset), PD_TIMEOUT_S + 60)
    elif fault == "kv-full":
        offset = int(lab.record.get("decode_log_offset", 0))
        lab.start_load(fault)
        _until("SGLang's 'KV cache pool is full' line",
               lambda: "KV cache pool is full" in lab.log_since("decode", offset), 300)
    elif fault == "watchdog":
        offset = int(lab.record.get("decode_log_offset", 0))
        post_json(lab.url["decode"] + "/slow_down", {"forward_sleep_time": 4 * WATCHDOG_S}, timeout=30)
        lab.start_load(fault)
        _until("SGLang's watchdog py-spy dump in the decode log",
               lambda: "Pyspy dump for PID" in lab.log_since("decode", offset), 3 * WATCHDOG_S + 60)
    elif fault == "server-killed":
        _kill_scheduler(lab, "prefill")
    elif fault == "breaker-open":
        _kill_scheduler(lab, "prefill")
        lab.start_load(fault)
        url = lab.router_metrics
        _until("smg's prefill breaker open",
               lambda: metric(url, "smg_worker_cb_state", lab.url["prefill"]) == 1.0, 60)


def set_engine_fault(lab_dir: Path, record: dict[str, Any], fault: str) -> None:
    """Switch a running engine lab to `fault` (healthy first, so faults do not stack)."""
    if fault not in ENGINE_FAULTS:
        raise PdforensicsError(f"unknown engine fault {fault!r}; choose one of: {', '.join(ENGINE_FAULTS)}")
    lab = _Lab(lab_dir, record)
    current = record.get("fault", "healthy")
    follows = (current, fault) in FOLLOWS  # the same state, one step further: no healing between
    if current in FINAL and not follows:
        raise PdforensicsError(f"engine lab: {current} ended a server; `pdforensics lab down --dir {lab_dir}`, "
                               "then `lab up --engine sglang`")
    if not follows:
        if current != "healthy" or fault == "healthy":
            heal(lab)
        record["decode_log_offset"] = lab.log_size("decode")  # the fault's lines come after this
    record["fault"] = fault
    save_record(lab_dir, record, {})
    paths(lab_dir)["fault"].write_text(fault + "\n")
    if fault != "healthy":
        apply_fault(lab, fault)

