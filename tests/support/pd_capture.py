"""Synthetic PD captures (through tests.support.bundles), for the report tests and the
report benchmarks: N hosts x G GPUs x P processes x S /metrics samples, optionally wedged,
partial, or carrying a planted text (an XSS payload) in cmdlines, env, logs and labels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.bundle.ondisk import iso
from pdforensics.redact.redactor import Redactor
from tests.support.bundles import T0, SynthWriter, http

SERVER = ("/usr/bin/python3", "-m", "sglang.launch_server")


@dataclass(frozen=True)
class SynthSpec:
    hosts: int = 8
    gpus: int = 8
    processes: int = 16  # per host: the server, one scheduler per GPU, detokenizer, helpers
    samples: int = 3
    interval_s: float = 2.0
    stack_dumps: int = 2
    log_lines: int = 120
    wedged: bool = True
    payload: str = ""  # planted in a flag, an env var, log lines and a metric label
    unreachable: int = 0  # the last N hosts could not be reached
    cut: bool = False  # the deadline came before /server_info and py-spy ran
    cluster: str = "synth"
    sglang_version: str = "0.5.23"  # what /server_info says (the shipped catalog is for 0.5.23)


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Host:
    """One synthetic host: a prefill or decode server with tp = gpus (host 0 adds a router)."""

    def __init__(self, spec: SynthSpec, i: int, writer: SynthWriter):
        self.spec, self.i, self.w = spec, i, writer
        self.role = "prefill" if i % 2 == 0 else "decode"
        self.name = f"{self.role}-{i // 2}"
        self.port = 30000 + i
        self.pid0 = 10_000 + i * 1000
        self.start = T0 - 3600 - (600 * i if spec.wedged else 5 * i)
        self.tp = max(1, min(spec.gpus, spec.processes - 2))

    def put(self, source: str, key: str, data: bytes, at: float, *, url: str | None = None,
            ext: str = "txt", target: dict[str, Any] | None = None,
            exit_status: int | None = 0, timed_out: bool = False, error: str | None = None,
            duration: float = 0.05, stderr: str = "") -> None:
        self.w.put(self.name, source, key, data, at, ext=ext, url=url, target=target,
                   exit_status=exit_status, timed_out=timed_out, error=error,
                   duration=duration, stderr=stderr, argv=("timeout", "-k", "2", "5", source))

    # -- processes ----------------------------------------------------------------------
    def processes(self) -> list[dict[str, Any]]:
        p = self.spec.payload
        procs = [{"pid": self.pid0, "ppid": 1, "state": "S", "start_epoch": self.start,
                  "threads": 40, "rss_kb": 9_000_000, "args": " ".join(self.argv()),
                  "kind": "server", "role": self.role, "port": self.port, "rank": None,
                  "root_pid": self.pid0}]
        for r in range(self.spec.processes - 1):
            if r < self.tp:
                kind, rank, args = "scheduler", f"TP{r}", f"sglang::scheduler_TP{r}"
            elif r == self.tp:
                kind, rank, args = "detokenizer", None, "sglang::detokenizer"
            else:
                kind, rank, args = "other", None, f"python3 -c helper{r}{p}"
            procs.append({"pid": self.pid0 + 1 + r, "ppid": self.pid0, "state": "S",
                          "start_epoch": self.start + 20, "threads": 8, "rss_kb": 2_000_000,
                          "args": args, "kind": kind, "role": self.role, "port": self.port,
                          "rank": rank, "root_pid": self.pid0})
        return procs

    def argv(self) -> tuple[str, ...]:
        flags = ["--model-path", "/models/DeepSeek-V3", "--disaggregation-mode", self.role,
                 "--tp-size", str(self.tp), "--host", "0.0.0.0", "--port", str(self.port),
                 "--enable-metrics", "--mem-fraction-static", "0.85", "--page-size", "64",
                 "--chunked-prefill-size", "8192" if self.i < 4 else "16384",
                 "--disaggregation-transfer-backend", "mooncake"]
        if self.spec.payload:
            flags += ["--served-model-name", self.spec.payload]
        return SERVER + tuple(flags)

    def environ(self) -> bytes:
        env = {"PATH": "/usr/bin", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "300",
               "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "300" if self.role == "prefill" else "600",
               "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "WARN",
               "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in range(self.spec.gpus)),
               "HF_TOKEN": "hf_SyntheticSecretValue0123456789"}
        if self.spec.payload:
            env["SGLANG_PLANTED"] = self.spec.payload
        return b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0"

    # -- evidence -----------------------------------------------------------------------
    def metrics(self, n: int) -> bytes:
        wedged = self.spec.wedged
        lab = f'engine_type="{self.role}",model_name="{_label(self.spec.payload or "dsv3")}"'
        lines = []
        gauges = {"sglang:num_running_reqs": 12, "sglang:num_queue_reqs": 3,
                  "sglang:token_usage": 0.42}
        if self.role == "prefill":
            gauges["sglang:num_prefill_inflight_queue_reqs"] = 9 if wedged else n % 3
            gauges["sglang:num_prefill_bootstrap_queue_reqs"] = 0
        else:
            gauges["sglang:num_decode_transfer_queue_reqs"] = 14 if wedged else n % 2
            gauges["sglang:num_decode_prealloc_queue_reqs"] = 2 if wedged else 0
        step = 0 if wedged else n
        counters = {"sglang:generation_tokens_total": 5_000_000 + 4000 * step,
                    "sglang:realtime_tokens_total": 90_000_000 + 60_000 * step,
                    "sglang:forward_execution_seconds_total": 10_000.0 + 1.5 * step,
                    "sglang:scheduler_idle_seconds_total": 200.0 + 2.0 * n,
                    "sglang:num_requests_total": 77_000 + 30 * step,
                    "sglang:num_transfer_failed_reqs_total": 4 + (n if wedged else 0)}
        for name, v in gauges.items():
            lines.append(f"# TYPE {name} gauge")
            lines += [f'{name}{{{lab},tp_rank="{r}",dp_rank="0"}} {v}' for r in range(self.tp)]
        for name, v in counters.items():
            lines.append(f"# TYPE {name} counter")
            lines += [f'{name}{{{lab},tp_rank="{r}",dp_rank="0"}} {v}' for r in range(self.tp)]
        return http("\n".join(lines) + "\n")

    def log(self) -> bytes:
        p = self.spec.payload
        out = []
        for k in range(self.spec.log_lines):
            t = T0 - 300 + k * 2
            stamp = _stamp(t)
            if self.spec.wedged and self.role == "decode" and k % 3 == 0:
                out.append(f"[{stamp} TP{k % self.tp}] Decode transfer failed for request "
                           f"rank=0 req.rid='r{k}' {p} with exception KVTransferError")
            else:
                out.append(f"[{stamp} TP{k % self.tp}] Decode batch. #running-req: 12 {p}")
        return ("\n".join(out) + "\n").encode()

    def gpus(self) -> tuple[bytes, bytes]:
        head = ("index, uuid, name, pci.bus_id, utilization.gpu [%], utilization.memory [%], "
                "memory.used [MiB], memory.total [MiB], temperature.gpu, power.draw [W]")
        rows, apps = [head], ["pid, process_name, gpu_uuid, used_gpu_memory [MiB]"]
        for g in range(self.spec.gpus):
            uuid = f"GPU-{self.i:04d}{g:04d}-0000-0000-0000-000000000000"
            util = 0 if self.spec.wedged else 60 + g
            rows.append(f"{g}, {uuid}, NVIDIA H200, 00000000:{g:02x}:00.0, {util} %, 5 %, "
                        f"120000 MiB, 143771 MiB, {40 + g}, {120 + g}.00 W")
            if g < self.tp:
                apps.append(f"{self.pid0 + 1 + g}, sglang::scheduler_TP{g}, {uuid}, 119000 MiB")
        return ("\n".join(rows) + "\n").encode(), ("\n".join(apps) + "\n").encode()

    def stack(self, rank: int, dump: int) -> bytes:
        pid = self.pid0 + 1 + rank
        odd = self.spec.wedged and self.role == "decode" and rank == self.tp - 1
        state = "idle" if self.spec.wedged else "active"
        if not self.spec.wedged:  # a working scheduler is somewhere else in every dump
            leaf = f"Scheduler.run_batch (sglang/srt/managers/scheduler.py:{200 + 7 * dump})"
        elif odd:
            leaf = ("GroupCoordinator._wait_for_peers (sglang/srt/distributed/parallel_state.py:21)\n"
                    "    GroupCoordinator.all_reduce (sglang/srt/distributed/parallel_state.py:15)")
        else:
            leaf = "DecodeTransferQueue.pop_transferred (sglang/srt/disaggregation/decode.py:21)"
        return (f"Process {pid}: sglang::scheduler_TP{rank}\nPython v3.11.7 (/usr/bin/python3)\n\n"
                f'Thread {pid} ({state}): "MainThread"\n    {leaf}\n'
                "    Scheduler.event_loop_normal_disagg_decode (sglang/srt/managers/scheduler.py:124)\n"
                "    run_scheduler_process (sglang/srt/managers/scheduler.py:176)\n"
                f'Thread {pid + 500} (idle): "transfer_worker"\n'
                "    Condition.wait (threading.py:331)\n    Queue.get (queue.py:180)\n").encode()

    def write(self) -> dict[str, Any]:
        s, t = self.spec, T0
        procs = self.processes()
        svc_t = {"role": self.role, "service_kind": "server", "port": self.port,
                 "address": "127.0.0.1"}
        self.put("ps", "ps", "".join(f"{p['pid']} {p['ppid']} S 3600 8 1000 {p['args']}\n"
                                     for p in procs).encode(), t)
        for p in procs:
            pt = {"pid": p["pid"], "kind": p["kind"], "rank": p["rank"], "role": self.role,
                  "state": "S", "root_pid": self.pid0}
            argv = self.argv() if p["kind"] == "server" else tuple(p["args"].split())
            self.put("cmdline", f"cmdline.pid{p['pid']}", b"\0".join(a.encode() for a in argv)
                     + b"\0", t + 0.1, ext="bin", target=pt)
            self.put("environ", f"environ.pid{p['pid']}", self.environ(), t + 0.1, ext="bin",
                     target=pt)
        for n in range(s.samples):
            self.put("metrics", f"metrics.{self.role}.{self.port}.s{n + 1}", self.metrics(n),
                     t + 0.2 + n * s.interval_s, url=f"http://127.0.0.1:{self.port}/metrics",
                     ext="http", target={**svc_t, "sample": n + 1})
        self.put("health", f"health.{self.role}.{self.port}", http(""), t + 0.3,
                 url=f"http://127.0.0.1:{self.port}/health", ext="http", target=svc_t)
        self.put("log_file", f"log_file.{self.role}.{self.port}", self.log(), t + 0.4,
                 target=svc_t)
        query, apps = self.gpus()
        self.put("nvidia_smi_query", "nvidia_smi_query", query, t + 1)
        self.put("nvidia_smi_apps", "nvidia_smi_apps", apps, t + 1)
        xid = (f"[Wed Dec  2 10:20:28 2026] NVRM: Xid (PCI:0000:0{self.i}:00): 79, pid="
               f"{self.pid0 + 1}, name=sglang::schedul, GPU has fallen off the bus.\n")
        wedged_host = s.wedged and self.i == 1
        self.put("kernel_log", "kernel_log", xid.encode() if wedged_host else b"boot ok\n", t + 1)
        url = f"http://127.0.0.1:{self.port}/server_info"
        if s.cut:
            self.put("server_info", f"server_info.{self.role}.{self.port}", b"", t + 9, url=url,
                     ext="http", target=svc_t, exit_status=None, duration=0.0,
                     error="not run: deadline reached")
        elif s.wedged:
            self.put("server_info", f"server_info.{self.role}.{self.port}", b"", t + 2, url=url,
                     ext="http", target=svc_t, exit_status=None, timed_out=True, duration=8.0)
        else:
            self.put("server_info", f"server_info.{self.role}.{self.port}",
                     http(json.dumps({"version": s.sglang_version})), t + 2, url=url, ext="http",
                     target=svc_t)
        for rank in range(self.tp):
            pid = self.pid0 + 1 + rank
            pt = {"pid": pid, "kind": "scheduler", "rank": f"TP{rank}", "role": self.role,
                  "state": "S", "root_pid": self.pid0}
            for d in range(s.stack_dumps):
                key = f"pyspy.pid{pid}.s{d + 1}"
                if s.cut:
                    self.put("pyspy", key, b"", t + 9, target={**pt, "sample": d + 1},
                             exit_status=None, duration=0.0, error="not run: deadline reached")
                else:
                    self.put("pyspy", key, self.stack(rank, d), t + 3 + d * 2,
                             target={**pt, "sample": d + 1}, duration=0.4)
        return {"discovered": True, "notes": [], "missing": [], "processes": procs,
                "services": [{"role": self.role, "kind": "server", "port": self.port,
                              "address": "127.0.0.1", "root_pid": self.pid0, "declared": True,
                              "tp_size": self.tp, "dp_size": 1, "unit": None,
                              "log_file": f"/var/log/sglang/{self.role}.log",
                              "metrics_port": None, "pids": [p["pid"] for p in procs]}]}


def _stamp(t: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def write_synthetic(out_dir: str | Path, spec: SynthSpec = SynthSpec()) -> Path:
    """Write one synthetic bundle under ``out_dir``; returns its path."""
    writer = SynthWriter(Path(out_dir), spec.cluster, T0 - 1, Redactor(key=b"synthetic"))
    hosts, reasons = [], []
    for i in range(spec.hosts):
        h = _Host(spec, i, writer)
        meta: dict[str, Any] = {"name": h.name, "address": f"10.0.0.{i + 10}", "reachable": True,
                                "error": None, "simulated_gpu": False,
                                "services": [{"role": h.role, "port": h.port}]}
        if i >= spec.hosts - spec.unreachable:
            meta.update(reachable=False, error="[Errno 111] Connection refused (port 22)")
            h.put("connect", "connect", b"", T0, exit_status=None, duration=3.0,
                  error="[Errno 111] Connection refused (port 22)")
            reasons.append(f"{h.name}: unreachable")
            disc: dict[str, Any] = {"discovered": False, "notes": [], "missing": [],
                                    "processes": [], "services": []}
        else:
            disc = h.write()
        if spec.cut and meta["reachable"]:
            reasons.append(f"{h.name}: {1 + h.tp * spec.stack_dumps} collector(s) not run "
                           f"before the deadline (10s)")
        writer.bundle.write_json(f"parsed/{h.name}/discovery.json", disc)
        hosts.append(meta)
    end = T0 + 4 + spec.samples * spec.interval_s + 2 * spec.stack_dumps
    manifest = {"status": "partial" if reasons else "complete", "partial_reasons": reasons,
                "hosts": hosts, "synthetic": True, "finished_epoch": end, "finished_at": iso(end)}
    return writer.finish(manifest)
