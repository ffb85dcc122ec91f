"""A bundle read back into typed views per host, service and process.

Everything downstream (analysis, report, diff) reads captures through this module, so a
live capture and a bundle on disk go through one code path: raw bytes -> parsers -> views.
The views are built from the source registry: each result goes to the view its source's
``Feed`` names (see feeds.py), read from parsed/ when current, else parsed from raw/.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from pdforensics.bundle.ondisk import Bundle, ResultEntry, load_bundle
from pdforensics.collectors.feeds import Fetch, MetricSample, Reading, StackDump
from pdforensics.model import ProcessInfo
from pdforensics.parsers.beneath import Beneath
from pdforensics.parsers.cuda_gdb import CudaKernel
from pdforensics.parsers.flight_recorder import FrDump
from pdforensics.parsers.frames import ProcessDump
from pdforensics.parsers.journal import SignatureHit
from pdforensics.parsers.k8s import PodEvent, PodFacts
from pdforensics.parsers.kernel_log import KernelEvent, KernelLog
from pdforensics.parsers.nccl_ras import RasReport
from pdforensics.parsers.nvidia_smi import ComputeApp, GpuInfo, NvlinkGpu, RowRemap, XidEvent
from pdforensics.parsers.nvml import NvmlReport
from pdforensics.parsers.requests import RequestLog
from pdforensics.parsers.router_log import RouterLog
from pdforensics.parsers.ss import SocketTable
from pdforensics.parsers.systemd import UnitState
from pdforensics.views.hostclock import on_capture_clock
from pdforensics.views.readings import Parsed, read_parsed
from pdforensics.views.window import Since, Window, window_host

__all__ = ["Fetch", "HostView", "LoadedCapture", "MetricSample", "ProcessView", "ServiceView",
           "StackDump", "load_capture"]


@dataclass(frozen=True)
class ProcessView:
    info: ProcessInfo
    cmdline: tuple[str, ...] = ()
    environ: tuple[tuple[str, str], ...] = ()
    stacks: tuple[StackDump, ...] = ()
    cuda_kernels: tuple[CudaKernel, ...] = ()  # capture --deep: cuda-gdb "info cuda kernels"
    cuda_error: str | None = None  # why that listing is missing (cuda-gdb absent, timed out)

    @property
    def env(self) -> dict[str, str]:
        return dict(self.environ)


@dataclass(frozen=True)
class ServiceView:
    """A server or router as captured: its endpoints, samples, processes, unit and logs."""

    host: str
    role: str
    kind: str  # server | router
    port: int
    address: str
    root_pid: int | None
    declared: bool
    tp_size: int
    dp_size: int
    unit: str | None
    log_file: str | None
    metrics_port: int | None
    metrics: tuple[MetricSample, ...] = ()
    fetches: dict[str, Fetch] = field(default_factory=dict)  # health, server_info, loads, ...
    processes: tuple[ProcessView, ...] = ()
    systemd: UnitState | None = None
    unit_file: str | None = None
    log_hits: tuple[SignatureHit, ...] = ()
    log_source: str | None = None  # journal | log_file | None
    log_entry: ResultEntry | None = None
    log_stacks: tuple[ProcessDump, ...] = ()  # SGLang's own watchdog/faulthandler dumps in the log
    requests: RequestLog | None = None  # request-level lines of the same log read
    router_log: RouterLog | None = None  # a router's breaker transitions and worker errors
    # the evidence window (views/window.py): where it starts and why; what came before it
    window_start: float | None = None
    window_from: str | None = None  # --since | server start | look-back N min
    log_history: tuple[SignatureHit, ...] = ()  # log signatures seen only before the window
    router_log_history: RouterLog | None = None  # breaker transitions, errors before it
    beneath: Beneath | None = None  # NCCL, transfer-engine, ... lines of the same log read

    @property
    def label(self) -> str:
        return f"{self.host} {self.role}:{self.port}"

    @property
    def root(self) -> ProcessView | None:
        return next((p for p in self.processes if p.info.pid == self.root_pid), None)

    @property
    def cmdline(self) -> tuple[str, ...]:
        root = self.root
        if root is None:
            return ()
        return root.cmdline or tuple(root.info.args.split())

    @property
    def environ(self) -> dict[str, str]:
        root = self.root
        return root.env if root is not None else {}

    @property
    def ranks(self) -> tuple[ProcessView, ...]:
        return tuple(p for p in self.processes if p.info.kind == "scheduler")

    @property
    def good_samples(self) -> tuple[MetricSample, ...]:
        return tuple(m for m in self.metrics if m.snapshot is not None and len(m.snapshot))

    def server_info(self) -> Any:
        for key in ("server_info", "get_server_info"):
            f = self.fetches.get(key)
            if f is not None and f.answered and f.status == 200:
                return f.json()
        return None

    def version(self) -> str | None:
        info = self.server_info()
        if isinstance(info, dict) and isinstance(info.get("version"), str):
            return str(info["version"])
        return None


@dataclass(frozen=True)
class HostView:
    name: str
    address: str
    reachable: bool
    error: str | None
    simulated_gpu: bool
    discovered: bool
    notes: tuple[str, ...]
    services: tuple[ServiceView, ...]
    processes: tuple[ProcessView, ...]
    gpus: tuple[GpuInfo, ...] = ()
    gpu_apps: tuple[ComputeApp, ...] = ()
    gpu_error: str | None = "nvidia-smi not collected"  # why GPU state is missing, when it is
    xids: tuple[XidEvent, ...] = ()
    established: SocketTable | None = None
    packages: dict[str, str] = field(default_factory=dict)
    uname: str | None = None
    nvml: NvmlReport | None = None
    nvlink: tuple[NvlinkGpu, ...] = ()  # nvidia-smi nvlink -e: error counters per link
    row_remap: tuple[RowRemap, ...] = ()  # nvidia-smi -q -d ROW_REMAPPER
    clock_offset_s: float | None = None  # the host's clock minus ours, at capture time
    # (the times this host wrote -- unit, log and Xid times -- are already corrected by it)
    k8s_pod: PodFacts | None = None  # kubectl get pod: restarts, probes, node, group
    k8s_events: tuple[PodEvent, ...] = ()  # kubectl get events of the pod
    k8s_debug: tuple[str, ...] = ()  # kubectl debug argv added to the pod (py-spy)
    xid_history: tuple[XidEvent, ...] = ()  # Xids from before the evidence window
    kernel: KernelLog | None = None  # Xid, GPU lost, PCIe AER, OOM kill, GSP (kernel log)
    window_start: float | None = None  # the earliest evidence window of its services
    kernel_source: str | None = None  # the source that gave it: kernel_log | kernel_journal
    flight_recorder: tuple[tuple[str, FrDump], ...] = ()  # (raw path, dump) harvested per rank
    fr_history: tuple[tuple[str, FrDump], ...] = ()  # those whose newest entry predates the window
    nccl_ras: RasReport | None = None  # capture --nccl-ras
    nccl_ras_error: str | None = None  # why that report is missing

    @property
    def kernel_history(self) -> tuple[KernelEvent, ...]:
        """Kernel events from before the evidence window (dated ones only)."""
        start = self.window_start
        if self.kernel is None or start is None:
            return ()
        return tuple(e for e in self.kernel.events if e.epoch is not None and e.epoch < start)


@dataclass(frozen=True)
class LoadedCapture:
    bundle: Bundle
    cluster: str
    status: str
    started_at: float
    finished_at: float
    partial_reasons: tuple[str, ...]
    hosts: tuple[HostView, ...]
    parse_errors: tuple[str, ...] = field(default=())
    window: Window = field(default_factory=Window)  # what counts as now (views/window.py)

    @property
    def path(self) -> Path:
        return self.bundle.path

    @property
    def results(self) -> tuple[ResultEntry, ...]:
        return self.bundle.results

    def services(self, role: str | None = None) -> Iterator[ServiceView]:
        for h in self.hosts:
            for s in h.services:
                if role is None or s.role == role:
                    yield s

    @cached_property
    def duration_s(self) -> float:
        return max(0.0, self.finished_at - self.started_at)

    @property
    def window_start(self) -> float | None:
        """The earliest window start of its services (the capture's look-back without any)."""
        starts = [s.window_start for s in self.services() if s.window_start is not None]
        return min(starts) if starts else None


def bundle_window(bundle: Bundle, since: float | Since | None = None) -> Window:
    """The window a bundle is read with: ``since`` when given (analyze --since; a duration
    counts back from the capture's start), else the one its capture was taken with (capture
    --since, in manifest.options), else the default."""
    if isinstance(since, Since):
        return Window(since=since.at(float(bundle.manifest.get("started_epoch") or 0.0)))
    if since is not None:
        return Window(since=since)
    opts = bundle.manifest.get("options")
    got = opts.get("since_epoch") if isinstance(opts, dict) else None
    return Window(since=float(got)) if isinstance(got, int | float) and got > 0 else Window()


def load_capture(path: str | Path, skip_sources: Collection[str] = (),
                 since: float | Since | None = None) -> LoadedCapture:
    """Read a bundle and parse every raw output into views.

    skip_sources leaves those sources out (unparsed, absent from the views): for readers
    that need only part of a capture, e.g. diff skips metrics, logs and stacks. ``since``
    (epoch seconds) starts the evidence window there instead of where the bundle says.
    """
    bundle = load_bundle(path)
    if skip_sources:
        bundle = replace(bundle, results=tuple(r for r in bundle.results
                                               if r.source not in skip_sources))
    return _Loader(bundle, bundle_window(bundle, since)).load()


class _Loader:
    """Builds the views: every result goes to the view its source's Feed names."""

    def __init__(self, bundle: Bundle, window: Window):
        self.bundle = bundle
        self.window = window
        self.errors: list[str] = []
        self.by_host: dict[str, list[ResultEntry]] = {}
        for r in bundle.results:
            self.by_host.setdefault(r.host, []).append(r)

    def load(self) -> LoadedCapture:
        m = self.bundle.manifest
        hosts_meta = m.get("hosts") or [{"name": h, "address": "", "reachable": True}
                                         for h in self.by_host]
        started = float(m.get("started_epoch", 0.0))
        hosts = tuple(window_host(self._host(h), self.window, started, self.bundle.text)
                      for h in hosts_meta)
        return LoadedCapture(
            bundle=self.bundle, cluster=str(m.get("cluster", "")),
            status=self.bundle.status, started_at=started,
            finished_at=float(m.get("finished_epoch", 0.0)),
            partial_reasons=tuple(m.get("partial_reasons", [])), hosts=hosts,
            parse_errors=tuple(self.errors), window=self.window,
        )

    def raw(self, entry: ResultEntry) -> bytes:
        """The one place raw output is read from the bundle."""
        return self.bundle.read(entry)

    def parse(self, entry: ResultEntry) -> Any:
        got: Parsed = read_parsed(self.bundle, entry, self.raw)
        if got.error is not None:
            self.errors.append(f"{entry.host} {entry.key}: {got.error}")
        return got.value

    def _fill(self, level: str, entries: list[ResultEntry]) -> dict[str, Any]:
        """Keyword arguments of one view from the results whose source feeds that level."""
        from pdforensics.collectors import REGISTRY  # (loose files never need the collectors,

        acc: dict[str, Any] = {}  # nor paramiko, which they import)
        for e in entries:
            src = REGISTRY.get(e.source)
            feed = src.feeds if src is not None else None
            if feed is None or feed.merge is None or feed.level != level:
                continue
            feed.merge(acc, feed.field, Reading(e, self.parse, self.raw, self.errors))
        return acc

    def _host(self, meta: dict[str, Any]) -> HostView:
        name = str(meta.get("name"))
        entries = self.by_host.get(name, [])
        disc = self.bundle.discovery(name)
        procs_by_pid = {p["pid"]: self._process(entries, p) for p in disc.get("processes", [])}
        services = tuple(self._service(name, entries, s, procs_by_pid)
                         for s in disc.get("services", []))
        return on_capture_clock(HostView(
            name=name, address=str(meta.get("address", "")),
            reachable=bool(meta.get("reachable", True)), error=meta.get("error"),
            simulated_gpu=bool(meta.get("simulated_gpu", False)),
            discovered=bool(disc.get("discovered", False)), notes=tuple(disc.get("notes", [])),
            services=services, processes=tuple(procs_by_pid.values()),
            **self._fill("host", entries),
        ))

    def _process(self, entries: list[ResultEntry], p: dict[str, Any]) -> ProcessView:
        fields: dict[str, Any] = {k: p.get(k) for k in ProcessInfo.__dataclass_fields__}
        info = ProcessInfo(**fields)
        mine = [e for e in entries if e.target.get("pid") == info.pid]
        return ProcessView(info=info, **self._fill("process", mine))

    def _service(self, host: str, entries: list[ResultEntry], s: dict[str, Any],
                 procs: dict[int, ProcessView]) -> ServiceView:
        port = s["port"]
        mine = [e for e in entries if e.target.get("port") == port
                and e.target.get("role") == s["role"] and "pid" not in e.target]
        unit = s.get("unit") or next((e.target.get("unit") for e in mine if e.target.get("unit")),
                                     None)
        return ServiceView(
            host=host, role=s["role"], kind=s["kind"], port=port, address=s["address"],
            root_pid=s.get("root_pid"), declared=bool(s.get("declared")),
            tp_size=int(s.get("tp_size", 1)), dp_size=int(s.get("dp_size", 1)),
            unit=unit, log_file=s.get("log_file"), metrics_port=s.get("metrics_port"),
            processes=tuple(procs[pid] for pid in s.get("pids", []) if pid in procs),
            **self._fill("service", mine),
        )
