"""Synthetic fleet captures on disk (through tests.support.bundles), read back through
`load_capture` like real ones: N hosts with chosen flags, env vars, packages and versions.
For the diff and store tests and the diff benchmarks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.bundle.ondisk import iso
from tests.support import bundles
from tests.support.bundles import SynthWriter, write_analysis

SERVER = ("/usr/bin/python3", "-m", "sglang.launch_server")


@dataclass(frozen=True)
class SynthService:
    role: str  # prefill | decode | router
    port: int
    flags: tuple[str, ...] = ()  # argv after the program
    env: tuple[tuple[str, str], ...] = ()
    version: str | None = "0.5.23"  # /server_info's; None: /server_info timed out
    tp: int = 2
    unit: str | None = None
    unit_file: str | None = None  # `systemctl cat` text
    metrics_samples: int = 0
    metrics_families: int = 40
    log_lines: int = 0

    @property
    def kind(self) -> str:
        return "router" if self.role == "router" else "server"


@dataclass(frozen=True)
class SynthHost:
    name: str
    services: tuple[SynthService, ...]
    packages: tuple[tuple[str, str], ...] = ()
    kernel: str = "6.1.0-28-amd64"
    driver: str | None = "570.124.06"
    cuda: str | None = "12.8"
    reachable: bool = True


def http(body: str, status: int = 200, ctype: str = "application/json") -> bytes:
    return bundles.http(body, status, ctype)


def metrics_text(role: str, tp: int, families: int, sample: int) -> str:
    lines = []
    for f in range(families):
        name = f"sglang:synthetic_metric_{f}" + ("_total" if f % 3 == 0 else "")
        kind = "counter" if f % 3 == 0 else "gauge"
        lines += [f"# HELP {name} Synthetic family {f}.", f"# TYPE {name} {kind}"]
        for r in range(tp):
            v = (f + 1) * (r + 1) * (sample if kind == "counter" else 1)
            lines.append(f'{name}{{engine_type="{role}",tp_rank="{r}",dp_rank="0"}} {v}.0')
    return "\n".join(lines) + "\n"


def _processes(s: SynthService, argv: tuple[str, ...], root_pid: int,
               taken_at: float) -> list[dict[str, Any]]:
    """The service's root process, then one scheduler per TP rank (pids after the root's)."""
    mine = [{"pid": root_pid, "ppid": 1, "state": "S", "start_epoch": taken_at - 3600,
             "threads": 40, "rss_kb": 1000, "args": " ".join(argv), "kind": s.kind,
             "role": s.role, "port": s.port, "rank": None, "root_pid": root_pid}]
    if s.kind == "server":
        for r in range(s.tp):
            mine.append({"pid": root_pid + 1 + r, "ppid": root_pid, "state": "S",
                         "start_epoch": taken_at - 3590, "threads": 20, "rss_kb": 900,
                         "args": f"sglang::scheduler_TP{r}", "kind": "scheduler",
                         "role": s.role, "port": s.port, "rank": f"TP{r}",
                         "root_pid": root_pid})
    return mine


def _put_processes(w: SynthWriter, h: SynthHost, s: SynthService, argv: tuple[str, ...],
                   mine: list[dict[str, Any]], taken_at: float) -> None:
    """cmdline and environ of every process, pip freeze of the server's root."""
    root_pid = mine[0]["pid"]
    for p in mine:
        tgt = {"pid": p["pid"], "kind": p["kind"], "rank": p["rank"], "role": s.role,
               "root_pid": root_pid}
        w.put(h.name, "cmdline", f"cmdline.pid{p['pid']}", "\0".join(argv).encode() + b"\0",
              taken_at, ext="bin", target=tgt)
        env = "".join(f"{k}={v}\0" for k, v in s.env)
        w.put(h.name, "environ", f"environ.pid{p['pid']}", env.encode(), taken_at, ext="bin",
              target=tgt)
    if s.kind == "server" and h.packages:
        freeze = "".join(f"{n}=={v}\n" for n, v in h.packages)
        w.put(h.name, "pip_freeze", f"pip_freeze.pid{root_pid}", freeze.encode(), taken_at,
              target={"pid": root_pid, "kind": "server", "role": s.role})


def _put_endpoints(w: SynthWriter, host: str, s: SynthService, taken_at: float) -> None:
    """/server_info, /metrics samples, the unit file and the log of one service."""
    svc_t = {"role": s.role, "port": s.port, "service_kind": s.kind}
    base = f"http://127.0.0.1:{s.port}"
    key = f"server_info.{s.role}.{s.port}"
    if s.kind == "server" and s.version is not None:
        w.put(host, "server_info", key, http(json.dumps({"version": s.version, "tp_size": s.tp})),
              taken_at, ext="http", target=svc_t, url=base + "/server_info")
    elif s.kind == "server":
        w.put(host, "server_info", key, b"", taken_at, ext="http", target=svc_t,
              url=base + "/server_info", exit_status=None, timed_out=True)
    for n in range(1, s.metrics_samples + 1):
        src = "router_metrics" if s.kind == "router" else "metrics"
        w.put(host, src, f"{src}.{s.role}.{s.port}.s{n}",
              http(metrics_text(s.role, s.tp, s.metrics_families, n), ctype="text/plain"),
              taken_at + 2 * (n - 1), ext="http", target={**svc_t, "sample": n},
              url=base + "/metrics")
    if s.unit_file is not None:
        w.put(host, "unit_file", f"unit_file.{s.role}.{s.port}", s.unit_file.encode(),
              taken_at, target={**svc_t, "unit": s.unit})
    if s.log_lines:
        log = "".join(f"[2026-12-02 10:{i // 60 % 60:02d}:{i % 60:02d}] Decode batch. "
                      f"#running-req: {i % 50}, #token: {i * 37}, gen throughput "
                      f"(token/s): {1000 + i % 300}.00\n" for i in range(s.log_lines))
        w.put(host, "log_file", f"log_file.{s.role}.{s.port}", log.encode(), taken_at,
              target=svc_t)


def _write_host(w: SynthWriter, h: SynthHost, taken_at: float, pid: int) -> int:
    """Everything one reachable host yields; returns the next free pid."""
    procs: list[dict[str, Any]] = []
    services: list[dict[str, Any]] = []
    w.put(h.name, "uname", "uname", f"Linux {h.name} {h.kernel} #1 SMP x86_64 GNU/Linux\n"
          .encode(), taken_at)
    if h.driver or h.cuda:
        w.put(h.name, "nvidia_smi", "nvidia_smi",
              f"| NVIDIA-SMI {h.driver}   Driver Version: {h.driver}   CUDA Version: {h.cuda} |\n"
              .encode(), taken_at)
    for s in h.services:
        argv = (*SERVER, *s.flags) if s.kind == "server" else (
            "/usr/bin/python3", "-m", "sglang_router.launch_router", *s.flags)
        mine = _processes(s, argv, pid, taken_at)
        pid += len(mine)
        _put_processes(w, h, s, argv, mine, taken_at)
        _put_endpoints(w, h.name, s, taken_at)
        procs += mine
        services.append({"role": s.role, "kind": s.kind, "port": s.port,
                         "address": "127.0.0.1", "root_pid": mine[0]["pid"], "declared": True,
                         "tp_size": s.tp if s.kind == "server" else 1, "dp_size": 1,
                         "unit": s.unit, "pids": [p["pid"] for p in mine]})
    w.discovery(h.name, procs, services)
    return pid


def write_capture(out_dir: Path, hosts: Sequence[SynthHost], taken_at: float,
                  cluster: str = "synth", verdict: str | None = None,
                  name: str | None = None, first_pid: int = 1000) -> Path:
    """Write one bundle under out_dir; `verdict` also writes a minimal analysis.json."""
    w = SynthWriter(out_dir, cluster, taken_at, name=name)
    pid = first_pid
    for h in hosts:
        if h.reachable:
            pid = _write_host(w, h, taken_at, pid)
    root = w.finish({
        "finished_at": iso(taken_at + 5), "finished_epoch": taken_at + 5,
        "status": "complete" if all(h.reachable for h in hosts) else "partial",
        "partial_reasons": [f"{h.name}: unreachable" for h in hosts if not h.reachable],
        "profile": "synthetic",
        "hosts": [{"name": h.name, "address": "10.0.0.1", "reachable": h.reachable,
                   "error": None if h.reachable else "connection refused"} for h in hosts]})
    if verdict is not None:
        write_analysis(root, verdict)
    return root


def pd_cluster(n_hosts: int, tp: int = 8, flags: Sequence[str] = (),
               env: Sequence[tuple[str, str]] = (), packages: int = 0, metrics_samples: int = 0,
               log_lines: int = 0, env_size: int = 0) -> list[SynthHost]:
    """A router on the first host, then prefill and decode hosts alternating."""
    base_env = tuple((f"SYNTH_VAR_{i}", f"value-{i}") for i in range(env_size)) + tuple(env)
    pkgs = tuple((f"package-{i}", f"1.{i}.0") for i in range(packages))
    pkgs += (("sglang", "0.5.23"), ("torch", "2.9.1")) if packages else ()
    hosts = []
    for i in range(n_hosts):
        role = "router" if i == 0 else ("prefill" if i % 2 else "decode")
        if role == "router":
            svc = SynthService(role, 8000, ("--pd-disaggregation", "--host", "0.0.0.0",
                                            "--port", "8000", "--policy", "cache_aware"),
                               base_env, version=None, tp=1, log_lines=log_lines,
                               metrics_samples=metrics_samples)
        else:
            port = 30000 if role == "prefill" else 30001
            argv = ("--model-path", "/models/DeepSeek-V3", "--disaggregation-mode", role,
                    "--tp-size", str(tp), "--port", str(port), "--mem-fraction-static", "0.85",
                    "--chunked-prefill-size", "8192", "--enable-metrics", *flags)
            svc = SynthService(role, port, argv, base_env, tp=tp, metrics_samples=metrics_samples,
                               log_lines=log_lines)
        hosts.append(SynthHost(f"{role}-{i}", (svc,), pkgs))
    return hosts
