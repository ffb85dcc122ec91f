"""A bundle read back into typed views per host, service and process.

Everything downstream (analysis, report, diff) reads captures through this module, so a
live capture and a bundle on disk go through one code path: raw bytes -> parsers -> views.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from pdforensics.bundle import Bundle, ResultEntry, load_bundle
from pdforensics.errors import ParseError
from pdforensics.model import ProcessInfo
from pdforensics.parsers.http import HttpResponse, parse_http_response
from pdforensics.parsers.journal import SignatureHit, scan_log_signatures
from pdforensics.parsers.nvidia_smi import (
    ComputeApp,
    GpuInfo,
    XidEvent,
    parse_compute_apps,
    parse_query_gpu,
    parse_xid_lines,
)
from pdforensics.parsers.proc import parse_cmdline, parse_environ
from pdforensics.parsers.prometheus import MetricsSnapshot, parse_metrics
from pdforensics.parsers.pyspy import classify_pyspy_error, parse_pyspy_text
from pdforensics.parsers.ss import SocketTable, parse_established
from pdforensics.parsers.stackmodel import ProcessDump, PyspyFailure
from pdforensics.parsers.systemd import UnitState, parse_systemctl_show


@dataclass(frozen=True)
class Fetch:
    """One HTTP fetch as evidence: how it ended and what came back."""

    key: str
    source: str
    url: str | None
    started_at: float
    duration_s: float
    timed_out: bool
    error: str | None
    exit_status: int | None
    response: HttpResponse | None
    stderr: str = ""

    @property
    def status(self) -> int | None:
        return self.response.status if self.response is not None else None

    @property
    def answered(self) -> bool:
        return self.status is not None and not self.timed_out

    def json(self) -> Any:
        if self.response is None or not self.response.body:
            return None
        try:
            return json.loads(self.response.body)
        except (ValueError, RecursionError):  # a host's body, even one nested to crash a reader
            return None


@dataclass(frozen=True)
class MetricSample:
    """One /metrics scrape: when it was taken and what it said."""

    key: str
    taken_at: float
    fetch: Fetch
    snapshot: MetricsSnapshot | None  # None when the scrape failed


@dataclass(frozen=True)
class StackDump:
    """One py-spy run against one process: a parsed dump or the failure and its fix."""

    key: str
    taken_at: float
    duration_s: float
    dumps: tuple[ProcessDump, ...]
    failure: PyspyFailure | None
    timed_out: bool
    error: str | None


@dataclass(frozen=True)
class ProcessView:
    info: ProcessInfo
    cmdline: tuple[str, ...] = ()
    environ: tuple[tuple[str, str], ...] = ()
    stacks: tuple[StackDump, ...] = ()

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
    metrics: tuple[MetricSample, ...]
    fetches: dict[str, Fetch]  # health, server_info, model_info, loads, workers, ...
    processes: tuple[ProcessView, ...]
    systemd: UnitState | None
    unit_file: str | None
    log_hits: tuple[SignatureHit, ...]
    log_source: str | None  # journal | log_file | None
    log_entry: ResultEntry | None = None

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
    gpus: tuple[GpuInfo, ...]
    gpu_apps: tuple[ComputeApp, ...]
    gpu_error: str | None  # why GPU state is missing, when it is
    xids: tuple[XidEvent, ...]
    established: SocketTable | None
    packages: dict[str, str]
    uname: str | None


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


def load_capture(path: str | Path, skip_sources: Collection[str] = ()) -> LoadedCapture:
    """Read a bundle and parse every raw output into views.

    skip_sources leaves those sources out (unparsed, absent from the views): for readers
    that need only part of a capture, e.g. diff skips metrics, logs and stacks.
    """
    bundle = load_bundle(path)
    if skip_sources:
        bundle = replace(bundle, results=tuple(r for r in bundle.results
                                               if r.source not in skip_sources))
    return _Loader(bundle).load()


class _Loader:
    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.errors: list[str] = []
        self.by_host: dict[str, list[ResultEntry]] = {}
        for r in bundle.results:
            self.by_host.setdefault(r.host, []).append(r)

    def load(self) -> LoadedCapture:
        m = self.bundle.manifest
        hosts_meta = m.get("hosts") or [{"name": h, "address": "", "reachable": True}
                                         for h in self.by_host]
        hosts = tuple(self._host(h) for h in hosts_meta)
        return LoadedCapture(
            bundle=self.bundle, cluster=str(m.get("cluster", "")),
            status=self.bundle.status, started_at=float(m.get("started_epoch", 0.0)),
            finished_at=float(m.get("finished_epoch", 0.0)),
            partial_reasons=tuple(m.get("partial_reasons", [])), hosts=hosts,
            parse_errors=tuple(self.errors),
        )

    def _parse(self, entry: ResultEntry, fn: Any, as_bytes: bool = False) -> Any:
        data = self.bundle.read(entry)
        try:
            return fn(data if as_bytes else data.decode("utf-8", "replace"))
        except ParseError as exc:
            self.errors.append(f"{entry.host} {entry.key}: {exc}")
            return None

    def _host(self, meta: dict[str, Any]) -> HostView:
        name = str(meta.get("name"))
        entries = self.by_host.get(name, [])
        disc = self.bundle.discovery(name)

        def first(source: str) -> ResultEntry | None:
            return next((e for e in entries if e.source == source), None)

        procs_by_pid = {p["pid"]: self._process(entries, p) for p in disc.get("processes", [])}
        services = tuple(self._service(name, entries, s, procs_by_pid)
                         for s in disc.get("services", []))
        gpus: tuple[GpuInfo, ...] = ()
        gpu_error = None
        q = first("nvidia_smi_query")
        if q is not None and q.ok:
            gpus = self._parse(q, parse_query_gpu) or ()
        elif q is not None:
            gpu_error = _why(q)
        else:
            gpu_error = "nvidia-smi not collected"
        apps_e = first("nvidia_smi_apps")
        apps = (self._parse(apps_e, parse_compute_apps) or ()) if apps_e and apps_e.ok else ()
        k = first("kernel_log")
        xids = (self._parse(k, parse_xid_lines) or ()) if k is not None and k.ok else ()
        est_e = first("ss_established")
        est = self._parse(est_e, parse_established) if est_e and est_e.ok else None
        packages: dict[str, str] = {}
        pf = first("pip_freeze")
        if pf is not None and pf.ok:
            from pdforensics.parsers.versions import parse_pip_freeze

            packages = dict(self._parse(pf, parse_pip_freeze) or {})
        un = first("uname")
        return HostView(
            name=name, address=str(meta.get("address", "")),
            reachable=bool(meta.get("reachable", True)), error=meta.get("error"),
            simulated_gpu=bool(meta.get("simulated_gpu", False)),
            discovered=bool(disc.get("discovered", False)), notes=tuple(disc.get("notes", [])),
            services=services, processes=tuple(procs_by_pid.values()), gpus=tuple(gpus),
            gpu_apps=tuple(apps), gpu_error=gpu_error, xids=tuple(xids), established=est,
            packages=packages,
            uname=self.bundle.text(un).strip() if un is not None and un.ok else None,
        )

    def _process(self, entries: list[ResultEntry], p: dict[str, Any]) -> ProcessView:
        fields: dict[str, Any] = {k: p.get(k) for k in ProcessInfo.__dataclass_fields__}
        info = ProcessInfo(**fields)
        pid = info.pid
        mine = [e for e in entries if e.target.get("pid") == pid]
        cmd = next((e for e in mine if e.source == "cmdline" and e.ok), None)
        env = next((e for e in mine if e.source == "environ" and e.ok), None)
        stacks = tuple(self._stack(e) for e in mine if e.source == "pyspy")
        return ProcessView(
            info=info,
            cmdline=(self._parse(cmd, parse_cmdline) or ()) if cmd else (),
            environ=(self._parse(env, parse_environ) or ()) if env else (),
            stacks=tuple(sorted(stacks, key=lambda s: s.taken_at)),
        )

    def _stack(self, e: ResultEntry) -> StackDump:
        dumps: tuple[ProcessDump, ...] = ()
        if e.exit_status == 0:
            dumps = self._parse(e, parse_pyspy_text) or ()
        failure = None
        if e.exit_status != 0 or e.timed_out or e.error:
            failure = classify_pyspy_error(e.stderr or self.bundle.text(e), e.exit_status)
        return StackDump(key=e.key, taken_at=e.started_at, duration_s=e.duration_s,
                         dumps=dumps, failure=failure, timed_out=e.timed_out, error=e.error)

    def _fetch(self, e: ResultEntry) -> Fetch:
        resp = self._parse(e, parse_http_response, as_bytes=True) if e.path else None
        return Fetch(key=e.key, source=e.source, url=e.url, started_at=e.started_at,
                     duration_s=e.duration_s, timed_out=e.timed_out, error=e.error,
                     exit_status=e.exit_status, response=resp, stderr=e.stderr)

    def _service(self, host: str, entries: list[ResultEntry], s: dict[str, Any],
                 procs: dict[int, ProcessView]) -> ServiceView:
        port = s["port"]
        mine = [e for e in entries if e.target.get("port") == port
                and e.target.get("role") == s["role"] and "pid" not in e.target]
        metrics = []
        fetches: dict[str, Fetch] = {}
        for e in mine:
            if e.source in ("metrics", "router_metrics"):
                f = self._fetch(e)
                snap = None
                if f.answered and f.status == 200 and f.response is not None:
                    snap = self._parse_metrics(e, f.response.body)
                metrics.append(MetricSample(e.key, e.started_at, f, snap))
            elif e.url is not None:
                fetches[e.source] = self._fetch(e)
        show = next((e for e in mine if e.source == "systemctl_show" and e.ok), None)
        unit_file = next((e for e in mine if e.source == "unit_file" and e.ok), None)
        log = next((e for e in mine if e.source in ("log_file", "journal") and e.path), None)
        hits = (self._parse(log, scan_log_signatures) or ()) if log is not None else ()
        unit = s.get("unit") or next((e.target.get("unit") for e in mine if e.target.get("unit")),
                                     None)
        return ServiceView(
            host=host, role=s["role"], kind=s["kind"], port=port, address=s["address"],
            root_pid=s.get("root_pid"), declared=bool(s.get("declared")),
            tp_size=int(s.get("tp_size", 1)), dp_size=int(s.get("dp_size", 1)),
            unit=unit, log_file=s.get("log_file"), metrics_port=s.get("metrics_port"),
            metrics=tuple(sorted(metrics, key=lambda m: m.taken_at)), fetches=fetches,
            processes=tuple(procs[pid] for pid in s.get("pids", []) if pid in procs),
            systemd=self._parse(show, parse_systemctl_show) if show else None,
            unit_file=self.bundle.text(unit_file) if unit_file else None,
            log_hits=tuple(hits), log_source=log.source if log else None, log_entry=log,
        )

    def _parse_metrics(self, e: ResultEntry, body: bytes) -> MetricsSnapshot | None:
        try:
            return parse_metrics(body.decode("utf-8", "replace"))
        except ParseError as exc:
            self.errors.append(f"{e.host} {e.key}: {exc}")
            return None


def _why(e: ResultEntry) -> str:
    if e.error:
        return e.error
    if e.timed_out:
        return f"timed out after {e.duration_s:.1f}s"
    tail = e.stderr.strip().splitlines()[-1] if e.stderr.strip() else ""
    return f"exit status {e.exit_status}" + (f": {tail[:200]}" if tail else "")
