"""A builder of small synthetic bundles on disk (read back through load_capture)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

T0 = 1_800_000_000.0
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
    return (f"HTTP/1.1 {status} OK\r\ncontent-type: text/plain\r\n"
            f"content-length: {len(body.encode())}\r\n\r\n{body}").encode()


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


class BundleBuilder:
    def __init__(self, root: Path):
        self.root = root
        self.servers: list[Server] = []
        self.unreachable: list[str] = []
        self.kernel: dict[str, str] = {}

    def add(self, **kw: Any) -> Server:
        s = Server(**kw)
        self.servers.append(s)
        return s

    def write(self) -> Path:
        b = self.root / "bundle"
        (b / "raw").mkdir(parents=True, exist_ok=True)
        results: list[dict[str, Any]] = []
        hosts: dict[str, dict[str, Any]] = {}
        pid = 1000

        def put(host: str, source: str, key: str, data: bytes, at: float, ext: str = "txt",
                url: str | None = None, timed_out: bool = False, target: dict | None = None,
                exit_status: int | None = 0, error: str | None = None) -> None:
            rel = f"raw/{host}/{key}.{ext}"
            (b / "raw" / host).mkdir(parents=True, exist_ok=True)
            (b / rel).write_bytes(data)
            results.append({"host": host, "source": source, "key": key, "argv": None if url
                            else ["x"], "url": url, "exit_status": exit_status,
                            "duration_s": 8.0 if timed_out else 0.1, "started_at": at,
                            "timed_out": timed_out, "truncated": False, "bytes": len(data),
                            "sha256": None, "path": rel, "error": error, "stderr": "",
                            "target": target or {}})

        for name in self.unreachable:
            hosts[name] = {"name": name, "address": "10.0.0.9", "reachable": False,
                           "error": "connection refused", "processes": [], "services": []}
        for s in self.servers:
            h = hosts.setdefault(s.host, {"name": s.host, "address": "local", "reachable": True,
                                          "error": None, "processes": [], "services": []})
            root = pid
            pid += 1
            argv = s.argv or ("python", "-m", "sglang.launch_server", "--model-path", "/m",
                              "--disaggregation-mode", s.role, "--tp-size", str(s.tp),
                              "--port", str(s.port))
            procs = [{"pid": root, "ppid": 1, "state": "S", "start_epoch": s.start,
                      "threads": 3, "rss_kb": 1, "args": " ".join(argv), "kind": s.kind,
                      "role": s.role, "port": s.port, "rank": None, "root_pid": root}]
            labels = s.ranks if s.ranks is not None else tuple(f"TP{i}" for i in range(s.tp))
            if s.kind == "router":
                labels = ()
            for label in labels:
                procs.append({"pid": pid, "ppid": root, "state": s.states.get(label, "S"),
                              "start_epoch": s.start, "threads": 3, "rss_kb": 1,
                              "args": f"sglang::scheduler_{label}", "kind": "scheduler",
                              "role": s.role, "port": s.port, "rank": label,
                              "root_pid": root})
                for i, text in enumerate(s.stacks.get(label, [])):
                    put(s.host, "pyspy", f"pyspy.pid{pid}.s{i + 1}", text.encode(),
                        T0 + 1 + s.stack_interval * i, target={"pid": pid, "kind": "scheduler",
                                                "rank": label, "role": s.role})
                pid += 1
            h["processes"].extend(procs)
            h["services"].append({"role": s.role, "kind": s.kind, "port": s.port,
                                  "address": "127.0.0.1", "root_pid": root, "declared": True,
                                  "tp_size": s.tp, "dp_size": 1,
                                  "pids": [p["pid"] for p in procs]})
            tgt = {"role": s.role, "port": s.port}
            src = "router_metrics" if s.kind == "router" else "metrics"
            for i, m in enumerate(s.samples):
                put(s.host, src, f"{src}.{s.role}.{s.port}.s{i + 1}",
                    http(metrics_text(m, s.role, s.tp)), T0 + i * s.interval, "http",
                    url=f"http://127.0.0.1:{s.port}/metrics", target=tgt)
            if s.server_info == "ok":
                put(s.host, "server_info", f"server_info.{s.role}.{s.port}",
                    http(json.dumps({"version": "0.5.9", "model_path": "/m"})), T0, "http",
                    url=f"http://127.0.0.1:{s.port}/server_info", target=tgt)
            elif s.server_info == "timeout":
                put(s.host, "server_info", f"server_info.{s.role}.{s.port}", b"", T0, "http",
                    url=f"http://127.0.0.1:{s.port}/server_info", timed_out=True,
                    target=tgt, exit_status=None)
            if s.log is not None:
                put(s.host, "log_file", f"log_file.{s.role}.{s.port}", s.log.encode(), T0,
                    target=tgt)
            if s.gpus is not None:
                put(s.host, "nvidia_smi_query", "nvidia_smi_query", s.gpus.encode(), T0)
        for host, text in self.kernel.items():
            put(host, "kernel_log", "kernel_log", text.encode(), T0)
        for name, h in hosts.items():
            (b / "parsed" / name).mkdir(parents=True, exist_ok=True)
            (b / "parsed" / name / "discovery.json").write_text(json.dumps(
                {"discovered": True, "notes": [], "processes": h["processes"],
                 "services": h["services"]}))
        manifest = {"format": 1, "cluster": "synth", "status": "complete",
                    "started_epoch": T0 - 1, "finished_epoch": T0 + 10, "partial_reasons": [],
                    "hosts": [{"name": n, "address": h["address"], "reachable": h["reachable"],
                               "error": h["error"]} for n, h in hosts.items()],
                    "results": results}
        (b / "manifest.json").write_text(json.dumps(manifest))
        return b


@pytest.fixture
def builder(tmp_path: Path) -> BundleBuilder:
    return BundleBuilder(tmp_path)
