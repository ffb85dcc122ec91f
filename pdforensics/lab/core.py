"""lab_up / lab_down / lab_status / set_fault: the lab's public operations."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from pdforensics.errors import PdforensicsError
from pdforensics.lab import clock as lab_clock
from pdforensics.lab import sshd
from pdforensics.lab.cluster_file import render_cluster
from pdforensics.lab.engine.faults import set_engine_fault
from pdforensics.lab.engine.up import engine_lab_up
from pdforensics.lab.faults import ENGINE_FAULTS, FAULTS, LAUNCH_FAULTS, add_launch_settings, check_switchable
from pdforensics.lab.layout import LabHost, Ports, lab_hosts, paths
from pdforensics.lab.procs import (
    check_port_free,
    find_lab_processes,
    kill_all,
    spawn,
    wait_until,
)
from pdforensics.lab.requirements import require_lab_tools
from pdforensics.lab.router import (
    check_router,
    client_argv,
    registered_workers,
    router_argv,
    routes_a_request,
    switch_router_fault,
)
from pdforensics.lab.servers import install_nvidia_smi, server_argv, server_env

READY_TIMEOUT_S = 20.0
TITLES_ENV = "PDFX_LAB_TITLES"  # "0": no process titles, spawned ranks (see lab_up)


@dataclass(frozen=True)
class LabHostInfo:
    """One lab host as a caller sees it."""

    name: str
    role: str
    address: str  # "local" without ssh
    bind: str  # where its HTTP (and sshd) listen
    http_port: int
    metrics_port: int | None
    ssh_port: int | None


@dataclass(frozen=True)
class LabInfo:
    """What lab_up started."""

    dir: Path
    cluster_file: Path
    fault: str
    hosts: tuple[LabHostInfo, ...]
    pids: dict[str, int]
    ports: Ports

    def host(self, role: str) -> LabHostInfo:
        return next(h for h in self.hosts if h.role == role)

    def url(self, role: str) -> str:
        h = self.host(role)
        return f"http://{h.bind}:{h.http_port}"


@dataclass(frozen=True)
class LabProcess:
    name: str  # router | prefill | decode | sshd:<host> | <role>:<title>
    pid: int
    alive: bool


@dataclass(frozen=True)
class LabStatus:
    dir: Path
    fault: str | None
    running: bool
    processes: tuple[LabProcess, ...]


def _check_fault(fault: str) -> None:
    if fault not in FAULTS:
        raise PdforensicsError(f"unknown fault {fault!r}; choose one of: {', '.join(FAULTS)}")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _read_json(lab_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(paths(lab_dir)["json"].read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recorded(data: dict[str, Any] | None) -> dict[str, tuple[int, float]]:
    if not data:
        return {}
    return {name: (int(v[0]), float(v[1])) for name, v in data.get("pids", {}).items()}


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _log_tail(path: Path, n: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:])
    except OSError:
        return ""


def lab_up(
    lab_dir: Path,
    fault: str = "healthy",
    ssh: bool = False,
    base_port: int | None = None,
    sudo_user: str | None = None,
    secret_env: dict[str, str] | None = None,
    extra_args: Mapping[str, Sequence[str]] | None = None,
    extra_env: Mapping[str, Mapping[str, str]] | None = None,
    secret_log: Sequence[str] = (),
    secret_labels: Mapping[str, str] | None = None,
    titles: bool = True,
    drop_args: Mapping[str, Sequence[str]] | None = None,
    router: str = "smg",
    engine: str = "standin",
    tp: int = 1,
    say: Callable[[str], None] | None = None,
) -> LabInfo:
    """Start a rehearsal PD cluster (router, prefill, decode; optional sshd hosts), detached.

    extra_args / extra_env, keyed by role ("prefill", "decode", "router"), append flags to
    that role's command line and set env vars in its environment (scenarios vary config).
    secret_env, secret_log and secret_labels plant secrets for redaction tests: env vars of
    every server, lines every server and the router log at start, labels of an info gauge
    on every server's /metrics (cmdline flags go through extra_args).
    drop_args, keyed by role, removes those switches from its command line (metrics off).
    titles=False: the ranks keep their python command lines (spawned children, no
    sglang::scheduler_* titles), as SGLang's do without setproctitle.
    router: "smg" (the real gateway, `smg launch`) or "standin" (`-m sglang_router...`).
    engine: "standin" (the fast stand-in servers) or "sglang" (the real SGLang 0.5.23 on the CPU,
    TP `tp`, its environment built or reused outside the checkout; `say` gets one line per step).
    """
    if engine == "sglang":
        return _engine_up(Path(lab_dir).resolve(), fault, ssh, base_port, tp, say or (lambda _line: None))
    if engine != "standin":
        raise PdforensicsError(f"unknown engine {engine!r}; choose standin or sglang")
    _check_fault(fault)
    require_lab_tools(titles)
    check_router(router)
    lab_dir = Path(lab_dir).resolve()
    ports = Ports.from_base(base_port)
    hosts = lab_hosts(ssh)
    _preflight(lab_dir, hosts, ports, ssh, sudo_user)
    _prepare_dir(lab_dir, hosts, ports, fault, ssh, secret_log, secret_labels)
    record: dict[str, Any] = {
        "dir": str(lab_dir),
        "fault": fault,
        "ssh": ssh,
        "sudo_user": sudo_user,
        "ports": ports.__dict__,
        "pids": {},
        "hosts": [{"name": h.name, "role": h.role, "address": h.address, "bind": h.bind,
                   "gpus": list(h.gpus)} for h in hosts],
        "extra_args": {k: list(v) for k, v in (extra_args or {}).items()},
        "extra_env": {k: dict(v) for k, v in (extra_env or {}).items()},
        "drop_args": {k: list(v) for k, v in (drop_args or {}).items()},
        "titles": titles,
        "launch_fault": fault if fault in LAUNCH_FAULTS else None,
        "router": router,
    }
    add_launch_settings(record, fault)
    try:
        if sudo_user:  # inside the try: a failed start revokes it again
            sshd.ensure_sudo_user(sudo_user, lab_dir)
        _start_processes(lab_dir, hosts, ports, record, secret_env)
        switch_router_fault(record, None, fault)
    except BaseException:
        lab_down(lab_dir)
        raise
    _write_atomic(paths(lab_dir)["cluster"], render_cluster(lab_dir, hosts, ports, ssh, sudo_user))
    return _info(lab_dir, record, hosts, ports, ssh)


def _engine_up(lab_dir: Path, fault: str, ssh: bool, base_port: int | None, tp: int,
               say: Callable[[str], None]) -> LabInfo:
    """The real engine lab (lab/engine/): started healthy, then switched to `fault`."""
    if fault not in ENGINE_FAULTS:
        raise PdforensicsError(f"unknown engine fault {fault!r}; choose one of: {', '.join(ENGINE_FAULTS)}")
    old = _read_json(lab_dir)
    if old and any(_alive(pid, ct) for pid, ct in _recorded(old).values()):
        raise PdforensicsError(f"a lab is already running in {lab_dir}; run `pdforensics lab down "
                               f"--dir {lab_dir}` first, or start another with --dir and --base-port")
    try:
        record, hosts, ports = engine_lab_up(lab_dir, ssh, base_port, tp, say)
        if fault != "healthy":
            set_engine_fault(lab_dir, record, fault)
    except BaseException:
        lab_down(lab_dir)
        raise
    return _info(lab_dir, record, hosts, ports, ssh)


def _preflight(lab_dir: Path, hosts: Sequence[LabHost], ports: Ports, ssh: bool,
               sudo_user: str | None) -> None:
    """Refuse to start over a running lab, or on a port someone else holds."""
    old = _read_json(lab_dir)
    if old and any(_alive(pid, ct) for pid, ct in _recorded(old).values()):
        raise PdforensicsError(f"a lab is already running in {lab_dir}; run `pdforensics lab down "
                               f"--dir {lab_dir}` first, or start another with --dir and --base-port")
    if sudo_user and not ssh:
        raise PdforensicsError("sudo_user needs ssh=True")
    if ssh:
        sshd.require_tools()
    for host in hosts:
        wanted = {
            "router": (ports.router, ports.router_metrics),
            "prefill": (ports.prefill, ports.bootstrap),
            "decode": (ports.decode,),
        }[host.role]
        for port in wanted + ((ports.ssh,) if ssh else ()):
            check_port_free(host.bind, port)


def _prepare_dir(lab_dir: Path, hosts: tuple[LabHost, ...], ports: Ports, fault: str, ssh: bool,
                 secret_log: Sequence[str], secret_labels: Mapping[str, str] | None) -> None:
    """The lab directory: logs, run state, the fault switch, planted secrets, fake nvidia-smi
    and (with ssh) each host's sshd configuration."""
    p = paths(lab_dir)
    for key in ("logs", "run"):
        p[key].mkdir(parents=True, exist_ok=True)
    for stale in p["run"].glob("*/rank*.json"):
        stale.unlink()
    _write_atomic(p["fault"], fault + "\n")
    lab_clock.write_clock(lab_dir, fault, ssh)
    planted = lab_dir / "planted.json"
    if secret_log or secret_labels:
        _write_atomic(planted, json.dumps({"log": list(secret_log), "labels": dict(secret_labels or {})}))
    else:
        planted.unlink(missing_ok=True)
    for host in hosts:
        install_nvidia_smi(lab_dir, host)
    if ssh:
        sshd.prepare(lab_dir, hosts, ports.ssh)


def _start_processes(lab_dir: Path, hosts: Sequence[LabHost], ports: Ports, record: dict[str, Any],
                     secret_env: dict[str, str] | None) -> None:
    """sshd hosts, prefill and decode, then router and clients (smg registers workers once, retrying
    after 30 s); waits for each. Pids are saved before each wait, so `lab down` finds them."""
    p = paths(lab_dir)
    by_role = {h.role: h for h in hosts}
    started: dict[str, psutil.Process] = {}
    if record["ssh"]:
        for host in hosts:
            started[f"sshd:{host.name}"] = spawn(
                sshd.sshd_argv(lab_dir, host), dict(os.environ), p["logs"] / f"sshd-{host.name}.log", lab_dir
            )
    for role in ("prefill", "decode"):
        host = by_role[role]
        started[role] = spawn(
            server_argv(host, ports, record["drop_args"].get(role, ())) + record["extra_args"].get(role, []),
            {**server_env(lab_dir, host, secret_env), **({} if record["titles"] else {TITLES_ENV: "0"}),
             **record["extra_env"].get(role, {})},
            p["logs"] / f"{role}.log",
            lab_dir,
        )
    _save_pids(p["json"], record, started)
    _wait_ready(lab_dir, by_role, ports, record["ssh"], started, phase="servers")
    router = by_role["router"]
    started["router"] = spawn(
        router_argv(record.get("router", "smg"), router, by_role["prefill"], by_role["decode"], ports)
        + record["extra_args"].get("router", []),
        {**server_env(lab_dir, router, secret_env), **record["extra_env"].get("router", {})},
        p["logs"] / "router.log",
        lab_dir,
    )
    started["client"] = spawn(client_argv(f"http://{router.bind}:{ports.router}"),
                              server_env(lab_dir, router, None), p["logs"] / "client.log", lab_dir)
    _save_pids(p["json"], record, started)
    _wait_ready(lab_dir, by_role, ports, record["ssh"], started, phase="router")


def _save_pids(path: Path, record: dict[str, Any], started: dict[str, psutil.Process]) -> None:
    record["pids"] = {k: [v.pid, v.create_time()] for k, v in started.items()}
    _write_atomic(path, json.dumps(record, indent=2))


def _alive(pid: int, ctime: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - ctime) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_ready(
    lab_dir: Path, by_role: dict[str, LabHost], ports: Ports, ssh: bool, started: dict[str, psutil.Process],
    phase: str,
) -> None:
    """Wait for the servers (and sshd hosts), or for the router and its two workers."""
    checks: list[tuple[str, str, Any]] = []
    if phase == "router":
        base = f"http://{by_role['router'].bind}:{ports.router}"
        prom = f"http://{by_role['router'].bind}:{ports.router_metrics}/metrics"
        checks += [("router", base + "/health", lambda: _http_ok(base + "/health")),
                   ("router", prom, lambda: _http_ok(prom)),
                   ("router", base + "/workers (2 workers)", lambda: registered_workers(base) >= 2),
                   ("router", base + "/generate answered", lambda: routes_a_request(base))]
        return _wait_all(lab_dir, checks, started)
    for role, port in (("prefill", ports.prefill), ("decode", ports.decode)):
        url = f"http://{by_role[role].bind}:{port}/health"
        checks.append((role, url, lambda u=url: _http_ok(u)))
    for role in ("prefill", "decode"):
        for rank in (0, 1):
            state = lab_dir / "run" / role / f"rank{rank}.json"
            checks.append((role, f"scheduler TP{rank} state", lambda s=state: s.exists()))
    if ssh:
        for host in by_role.values():
            checks.append(
                (
                    f"sshd-{host.name}",
                    f"sshd {host.bind}:{ports.ssh}",
                    lambda h=host: sshd.banner_ready(h.bind, ports.ssh),
                )
            )
    _wait_all(lab_dir, checks, started)


def _wait_all(lab_dir: Path, checks: list[tuple[str, str, Any]], started: dict[str, psutil.Process]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    for name, what, check in checks:
        proc = started.get(name if not name.startswith("sshd-") else "sshd:" + name[5:])

        def done(c: Any = check, p: psutil.Process | None = proc) -> bool:
            return bool(c()) or (p is not None and not _running(p))

        ok = wait_until(done, max(0.0, deadline - time.monotonic()))
        if not ok or not check():
            log = lab_dir / "logs" / f"{name}.log"
            raise PdforensicsError(
                f"lab {name} not ready ({what}) within {READY_TIMEOUT_S:.0f} s; "
                f"see {log}: {_log_tail(log)}"
            )


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _info(lab_dir: Path, record: dict[str, Any], hosts: tuple[LabHost, ...], ports: Ports, ssh: bool) -> LabInfo:
    infos = []
    for h in hosts:
        http = {"router": ports.router, "prefill": ports.prefill, "decode": ports.decode}[h.role]
        infos.append(
            LabHostInfo(
                h.name,
                h.role,
                h.address,
                h.bind,
                http,
                ports.router_metrics if h.role == "router" else None,
                ports.ssh if ssh else None,
            )
        )
    return LabInfo(
        dir=lab_dir,
        cluster_file=paths(lab_dir)["cluster"],
        fault=str(record["fault"]),
        hosts=tuple(infos),
        pids={k: int(v[0]) for k, v in record["pids"].items()},
        ports=ports,
    )


def lab_down(lab_dir: Path) -> None:
    """Kill every process of the lab (servers, ranks, router, sshd) and revoke its ops user's
    account and sudo; idempotent."""
    lab_dir = Path(lab_dir).resolve()
    p = paths(lab_dir)
    procs = find_lab_processes(lab_dir, _recorded(_read_json(lab_dir)))
    try:
        left = kill_all(procs)
    finally:
        sshd.revoke_sudo_user(lab_dir)  # its account (if the lab made it) and sudoers drop-in
    if left:
        raise PdforensicsError(f"could not stop lab processes: {', '.join(str(x.pid) for x in left)}")
    for path in [p["json"], *p["run"].glob("*/rank*.json"), *p["sshd"].glob("*.pid")]:
        path.unlink(missing_ok=True)


def lab_status(lab_dir: Path) -> LabStatus:
    """Which processes of the lab are alive, and its current fault."""
    lab_dir = Path(lab_dir).resolve()
    data = _read_json(lab_dir)
    fault_file = paths(lab_dir)["fault"]
    fault = fault_file.read_text().strip() if fault_file.exists() else None
    out: list[LabProcess] = []
    for name, (pid, ctime) in _recorded(data).items():
        alive = _alive(pid, ctime)
        out.append(LabProcess(name, pid, alive))
        if alive and name in ("prefill", "decode"):
            try:
                for child in psutil.Process(pid).children():
                    title = " ".join(child.cmdline()).strip() or child.name()
                    out.append(LabProcess(f"{name}:{title}", child.pid, child.status() != psutil.STATUS_ZOMBIE))
            except psutil.Error:
                pass
    running = any(x.alive for x in out)
    return LabStatus(dir=lab_dir, fault=fault if data else None, running=running, processes=tuple(out))


def set_fault(lab_dir: Path, fault: str) -> None:
    """Switch the fault at run time; servers pick it up within about 0.5 s.

    process-dead kills decode TP1 for good: switching back needs lab_down + lab_up.
    """
    lab_dir = Path(lab_dir).resolve()
    data = _read_json(lab_dir)
    if data is None or data.get("engine") != "sglang":
        _check_fault(fault)
    if data is None:
        raise PdforensicsError(f"no lab in {lab_dir}; start one with `pdforensics lab up --dir {lab_dir}`, "
                               "or pass the --dir of the running lab")
    if data.get("engine") == "sglang":
        set_engine_fault(lab_dir, data, fault)
        return
    check_switchable(fault, data.get("launch_fault"))
    _write_atomic(paths(lab_dir)["fault"], fault + "\n")
    lab_clock.write_clock(lab_dir, fault, bool(data.get("ssh")))
    switch_router_fault(data, data.get("fault"), fault)
    data["fault"] = fault
    _write_atomic(paths(lab_dir)["json"], json.dumps(data, indent=2))
