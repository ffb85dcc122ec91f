"""A builder of small synthetic bundles for the analysis tests (read back through
load_capture): servers with chosen metrics samples, ranks, states, stacks and logs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import bundles
from tests.support.bundles import T0, SynthWriter

Metrics = dict[str, Any]  # name -> value | {rank_index: value}


def metrics_text(m: Metrics, role: str, ranks: int) -> str:
    lines = []
    for name, v in m.items():
        if isinstance(v, dict):
            for r, val in v.items():
                lines.append(f'{name}{{engine_type="{role}",tp_rank="{r}",dp_rank="0"}} {val}')
        elif name.startswith("sglang:") and not name.endswith("_total"):
            lines.extend(f'{name}{{engine_type="{role}",tp_rank="{r}",dp_rank="0"}} {v}'
                         for r in range(ranks))
        else:
            lines.append(f'{name}{{engine_type="{role}"}} {v}')
    return "\n".join(lines) + "\n"


def http(body: str, status: int = 200) -> bytes:
    return bundles.http(body, status)


@dataclass
class Server:
    host: str
    role: str
    port: int
    tp: int = 2
    samples: list[Metrics] = field(default_factory=list)
    interval: float = 2.0
    ranks: tuple[str, ...] | None = None  # rank labels present (default all tp ranks)
    states: dict[str, str] = field(default_factory=dict)  # rank -> ps state
    server_info: str | None = "ok"  # ok | timeout | None
    stacks: dict[str, list[str]] = field(default_factory=dict)  # rank -> dump texts
    argv: tuple[str, ...] = ()
    start: float = T0 - 3600
    log: str | None = None
    kind: str = "server"
    gpus: str | None = None  # nvidia-smi --query-gpu csv
    stack_interval: float = 2.0  # seconds between one rank's py-spy dumps
    probe: str | None = None  # /health_generate: ok | timeout | 503 (with /health 200); None: not probed
    env: dict[str, str] | None = None  # the root process's environ (none collected when None)
    version: str = "0.5.9"  # the sglang version /server_info reports
    raw_samples: list[str] = field(default_factory=list)  # /metrics texts as they are (routers)
    # source -> body (/workers, ...), answered 200, or (status, body)
    raw_fetches: dict[str, str | tuple[int, str]] = field(default_factory=dict)
    raw_logs: dict[str, str] = field(default_factory=dict)  # source -> text (router_log, ...)


class BundleBuilder:
    """Servers, unreachable hosts, kernel logs and host outputs, written as one bundle named
    `bundle` under root (through tests.support.bundles: the product's BundleWriter)."""

    def __init__(self, root: Path):
        self.root = root
        self.servers: list[Server] = []
        self.unreachable: list[str] = []
        self.kernel: dict[str, str] = {}
        self.host_outputs: dict[tuple[str, str], tuple[str, str]] = {}  # (host, source) -> (text, ext)
        self.no_gpu_hosts: list[str] = []  # reachable hosts whose nvidia-smi finds no GPU (exit 6)
        self.fr: list[tuple[str, str, bytes]] = []  # (host, the dump's path there, its JSON)

    def add(self, **kw: Any) -> Server:
        s = Server(**kw)
        self.servers.append(s)
        return s

    def write(self) -> Path:
        w = SynthWriter(self.root, "synth", T0 - 1, name="bundle")
        hosts: dict[str, dict[str, Any]] = {}
        for name in self.unreachable:
            hosts[name] = {"name": name, "address": "10.0.0.9", "reachable": False,
                           "error": "connection refused", "processes": [], "services": []}
        pid = 1000
        for s in self.servers:
            h = hosts.setdefault(s.host, {"name": s.host, "address": "local", "reachable": True,
                                          "error": None, "processes": [], "services": []})
            pid = _write_server(w, s, h, pid)
        for host, text in self.kernel.items():
            _put(w, host, "kernel_log", "kernel_log", text.encode(), T0)
        for host in self.no_gpu_hosts:  # what nvidia-smi says on a host without a GPU
            hosts.setdefault(host, {"name": host, "address": "local", "reachable": True,
                                    "error": None, "processes": [], "services": []})
            for source in ("nvidia_smi_query", "nvidia_smi_apps", "nvidia_smi"):
                _put(w, host, source, source, b"No devices were found\n", T0, exit_status=6)
        for i, (host, path, data) in enumerate(self.fr):  # read as `cat PATH` (rank: its name)
            w.put(host, "flight_recorder", f"flight_recorder.{i}", data, T0, ext="json",
                  argv=("cat", path))
        for (host, source), (text, ext) in self.host_outputs.items():
            _put(w, host, source, source, text.encode(), T0, ext=ext)
        for name, h in hosts.items():
            w.discovery(name, h["processes"], h["services"])
        return w.finish({
            "cluster": "synth", "status": "complete", "started_epoch": T0 - 1,
            "finished_epoch": T0 + 10, "partial_reasons": [],
            "hosts": [{"name": n, "address": h["address"], "reachable": h["reachable"],
                       "error": h["error"]} for n, h in hosts.items()]})


def _put(w: SynthWriter, host: str, source: str, key: str, data: bytes, at: float,
         ext: str = "txt", url: str | None = None, timed_out: bool = False,
         target: dict[str, Any] | None = None, exit_status: int | None = 0) -> None:
    w.put(host, source, key, data, at, ext=ext, url=url, timed_out=timed_out, target=target,
          exit_status=exit_status, duration=8.0 if timed_out else 0.1, argv=("x",))


def _write_server(w: SynthWriter, s: Server, h: dict[str, Any], pid: int) -> int:
    """One server's processes (into `h`), stacks, metrics, /server_info, log and GPUs;
    returns the next free pid."""
    root = pid
    pid += 1
    argv = s.argv or ("python", "-m", "sglang.launch_server", "--model-path", "/m",
                      "--disaggregation-mode", s.role, "--tp-size", str(s.tp),
                      "--port", str(s.port))
    procs = [{"pid": root, "ppid": 1, "state": "S", "start_epoch": s.start,
              "threads": 3, "rss_kb": 1, "args": " ".join(argv), "kind": s.kind,
              "role": s.role, "port": s.port, "rank": None, "root_pid": root}]
    labels = s.ranks if s.ranks is not None else tuple(f"TP{i}" for i in range(s.tp))
    for label in () if s.kind == "router" else labels:
        procs.append({"pid": pid, "ppid": root, "state": s.states.get(label, "S"),
                      "start_epoch": s.start, "threads": 3, "rss_kb": 1,
                      "args": f"sglang::scheduler_{label}", "kind": "scheduler",
                      "role": s.role, "port": s.port, "rank": label, "root_pid": root})
        for i, text in enumerate(s.stacks.get(label, [])):
            _put(w, s.host, "pyspy", f"pyspy.pid{pid}.s{i + 1}", text.encode(), T0 + 1 + s.stack_interval * i,
                 target={"pid": pid, "kind": "scheduler", "rank": label, "role": s.role})
        pid += 1
    h["processes"].extend(procs)
    if s.env is not None:
        w.put(s.host, "environ", f"environ.pid{root}",
              "".join(f"{k}={v}\0" for k, v in s.env.items()).encode(), T0, ext="bin",
              target={"pid": root, "kind": s.kind, "rank": None, "role": s.role,
                      "root_pid": root})
    h["services"].append({"role": s.role, "kind": s.kind, "port": s.port,
                          "address": "127.0.0.1", "root_pid": root, "declared": True,
                          "tp_size": s.tp, "dp_size": 1, "pids": [p["pid"] for p in procs]})
    tgt = {"role": s.role, "port": s.port}
    src = "router_metrics" if s.kind == "router" else "metrics"
    url = f"http://127.0.0.1:{s.port}"
    texts = s.raw_samples or [metrics_text(m, s.role, s.tp) for m in s.samples]
    for i, text in enumerate(texts):
        _put(w, s.host, src, f"{src}.{s.role}.{s.port}.s{i + 1}", http(text), T0 + i * s.interval,
             "http", url=url + "/metrics", target=tgt)
    for source, answer in s.raw_fetches.items():
        status, body = answer if isinstance(answer, tuple) else (200, answer)
        _put(w, s.host, source, f"{source}.{s.role}.{s.port}", bundles.http(body, status), T0, "http",
             url=f"{url}/{source}", target=tgt)
    for source, text in s.raw_logs.items():
        _put(w, s.host, source, f"{source}.{s.role}.{s.port}", text.encode(), T0, target=tgt)
    if s.server_info == "ok":
        _put(w, s.host, "server_info", f"server_info.{s.role}.{s.port}",
             http(json.dumps({"version": s.version, "model_path": "/m"})), T0, "http",
             url=url + "/server_info", target=tgt)
    elif s.server_info == "timeout":
        _put(w, s.host, "server_info", f"server_info.{s.role}.{s.port}", b"", T0, "http",
             url=url + "/server_info", timed_out=True, target=tgt, exit_status=None)
    if s.probe is not None:
        _write_probe(w, s, url, tgt)
    if s.log is not None:
        _put(w, s.host, "log_file", f"log_file.{s.role}.{s.port}", s.log.encode(), T0, target=tgt)
    if s.gpus is not None:
        _put(w, s.host, "nvidia_smi_query", "nvidia_smi_query", s.gpus.encode(), T0)
    return pid


def _write_probe(w: SynthWriter, s: Server, url: str, tgt: dict[str, Any]) -> None:
    """/health (200) and /health_generate as `s.probe` says."""
    _put(w, s.host, "health", f"health.{s.role}.{s.port}", http(""), T0, "http",
         url=url + "/health", target=tgt)
    key = f"health_generate.{s.role}.{s.port}"
    if s.probe == "timeout":
        _put(w, s.host, "health_generate", key, b"", T0, "http", url=url + "/health_generate",
             timed_out=True, target=tgt, exit_status=None)
    else:
        _put(w, s.host, "health_generate", key, http("", 200 if s.probe == "ok" else 503), T0,
             "http", url=url + "/health_generate", target=tgt)
