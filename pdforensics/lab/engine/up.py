"""`lab up --engine sglang`: the real SGLang 0.5.23 as a PD pair on the CPU behind the real smg.

Starts (optionally) one loopback sshd per lab host, the prefill and decode servers, smg, and
the lab's client; returns once one real request has come back through smg with its 16 tokens
(smg answers /health before it can route). Pids are saved before every wait, so `lab down`
stops whatever was started, also after a failed start."""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pdforensics.errors import PdforensicsError
from pdforensics.lab import clock as lab_clock
from pdforensics.lab import sshd
from pdforensics.lab.cluster_file import render_cluster
from pdforensics.lab.engine.env import SGLANG_VERSION, EngineEnv, Say, ensure_engine_env
from pdforensics.lab.engine.launch import (
    engine_env,
    engine_router_argv,
    engine_server_argv,
    router_env,
    tool_argv,
)
from pdforensics.lab.layout import STANDIN_DIR, LabHost, Ports, lab_hosts, paths
from pdforensics.lab.procs import check_port_free, spawn

SERVER_TIMEOUT_S = 600.0  # a server starts in 35-115 s here; more while other work loads the box
ROUTE_TIMEOUT_S = 120.0
REQUEST = {"text": "hello world, the prefill server",
           "sampling_params": {"max_new_tokens": 16, "temperature": 0, "ignore_eos": True}}
CLIENT_INTERVAL_S = "1.0"  # the lab's client: one small request a second through smg


def post_json(url: str, body: Any, timeout: float) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def http_ok(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def routes_16_tokens(router: str) -> bool:
    try:
        out = post_json(router + "/generate", REQUEST, timeout=30)
    except (OSError, ValueError):
        return False
    return isinstance(out, dict) and len(out.get("output_ids") or []) == 16


def save_record(lab_dir: Path, record: dict[str, Any], started: dict[str, psutil.Process]) -> None:
    record["pids"].update({k: [v.pid, v.create_time()] for k, v in started.items()})
    path = paths(lab_dir)["json"]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, path)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait(lab_dir: Path, what: str, check: Callable[[], bool], watched: dict[str, psutil.Process],
          timeout_s: float) -> float:
    """Poll check() until true; a watched process that exits first is a one-line error."""
    t0 = time.monotonic()
    while not check():
        for name, proc in watched.items():
            if not _running(proc):
                log = lab_dir / "logs" / f"{name}.log"
                raise PdforensicsError(f"engine lab: {name} (pid {proc.pid}) exited while waiting for {what}; "
                                       f"see {log}: {_tail(log)}")
        if time.monotonic() - t0 > timeout_s:
            raise PdforensicsError(f"engine lab: no {what} within {timeout_s:.0f} s; see {lab_dir / 'logs'}")
        time.sleep(1.0)
    return time.monotonic() - t0


def _tail(path: Path, n: int = 2) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(ln[:200] for ln in lines[-n:])


def engine_lab_up(lab_dir: Path, ssh: bool, base_port: int | None, tp: int, say: Say,
                  env_root: Path | None = None) -> tuple[dict[str, Any], tuple[LabHost, ...], Ports]:
    """Build or reuse the environment, start sshd hosts, prefill, decode, smg and the client."""
    if tp not in (1, 2):
        raise PdforensicsError(f"--tp {tp}: the engine lab runs TP 1 or 2 (gloo on this CPU)")
    env = ensure_engine_env(env_root, say)
    ports = Ports.from_base(base_port)
    hosts = lab_hosts(ssh)
    if ssh:
        sshd.require_tools()
    for host in hosts:
        wanted = {"router": (ports.router, ports.router_metrics), "prefill": (ports.prefill, ports.bootstrap),
                  "decode": (ports.decode,)}[host.role]
        for port in wanted + ((ports.ssh,) if ssh else ()):
            check_port_free(host.bind, port)
    p = paths(lab_dir)
    for key in ("logs", "run"):
        p[key].mkdir(parents=True, exist_ok=True)
    (p["fault"]).write_text("healthy\n")
    lab_clock.write_clock(lab_dir, "healthy", ssh)
    if ssh:
        sshd.prepare(lab_dir, hosts, ports.ssh)
    record: dict[str, Any] = {
        "dir": str(lab_dir), "fault": "healthy", "ssh": ssh, "sudo_user": None, "ports": ports.__dict__,
        "pids": {}, "hosts": [{"name": h.name, "role": h.role, "address": h.address, "bind": h.bind,
                               "gpus": []} for h in hosts],
        "extra_args": {}, "extra_env": {}, "drop_args": {}, "titles": True, "launch_fault": None,
        "router": "smg", "engine": "sglang", "tp": tp, "env_root": str(env.root),
        "sglang_version": SGLANG_VERSION,
    }
    _start(lab_dir, env, hosts, ports, record, say)
    text = render_cluster(lab_dir, hosts, ports, ssh, None, gpus=False)
    p["cluster"].write_text(text)
    return record, hosts, ports


def _start(lab_dir: Path, env: EngineEnv, hosts: tuple[LabHost, ...], ports: Ports, record: dict[str, Any],
           say: Say) -> None:
    by_role = {h.role: h for h in hosts}
    logs = lab_dir / "logs"
    started: dict[str, psutil.Process] = {}
    t0 = time.monotonic()
    if record["ssh"]:
        for host in hosts:
            started[f"sshd:{host.name}"] = spawn(sshd.sshd_argv(lab_dir, host), dict(os.environ),
                                                 logs / f"sshd-{host.name}.log", lab_dir)
    for role in ("prefill", "decode"):
        host = by_role[role]
        cwd = lab_dir / "run" / role  # SGLang's crash handler looks for CUDA core pipes in its cwd
        cwd.mkdir(parents=True, exist_ok=True)
        started[role] = spawn(engine_server_argv(env, host, ports, record["tp"]),
                              engine_env(env, lab_dir, host, record["tp"]), logs / f"{role}.log", cwd)
    save_record(lab_dir, record, started)
    say(f"engine lab: prefill (pid {started['prefill'].pid}) and decode (pid {started['decode'].pid}) "
        f"starting, TP {record['tp']}; logs in {logs}")
    servers = {r: started[r] for r in ("prefill", "decode")}
    for role in ("prefill", "decode"):
        url = f"http://{by_role[role].bind}:{getattr(ports, role)}/health"
        _wait(lab_dir, f"{role} /health 200", functools.partial(http_ok, url), servers, SERVER_TIMEOUT_S)
        say(f"engine lab: {role} ready ({time.monotonic() - t0:.0f} s)")
    t_servers = time.monotonic() - t0
    router = by_role["router"]
    started["router"] = spawn(engine_router_argv(env, router, by_role["prefill"], by_role["decode"], ports),
                              router_env(lab_dir, router), logs / "router.log", lab_dir)
    save_record(lab_dir, record, started)
    base = f"http://{router.bind}:{ports.router}"
    watched = {**servers, "router": started["router"]}
    _wait(lab_dir, "request through smg with 16 tokens", lambda: routes_16_tokens(base), watched, ROUTE_TIMEOUT_S)
    t_routed = time.monotonic() - t0
    t1 = time.monotonic()
    ok = routes_16_tokens(base)
    record["timings"] = {"servers_ready_s": round(t_servers, 1), "routed_s": round(t_routed, 1),
                         "request_s": round(time.monotonic() - t1, 3) if ok else None}
    say(f"engine lab: smg routed a request end to end ({t_routed:.0f} s after start)")
    started["client"] = spawn(tool_argv(sys.executable, "client", [base, CLIENT_INTERVAL_S]),
                              {**router_env(lab_dir, router), "PYTHONPATH": str(STANDIN_DIR)},
                              logs / "client.log", lab_dir)
    save_record(lab_dir, record, started)
    if record["ssh"]:
        for host in hosts:
            _wait(lab_dir, f"sshd on {host.bind}:{ports.ssh}",
                  functools.partial(sshd.banner_ready, host.bind, ports.ssh), {}, 20.0)
