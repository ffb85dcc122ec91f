"""Which jobs to run on one host, decided as results arrive (discovery first)."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pdforensics.capture.beneath_plan import BeneathPlan
from pdforensics.capture.request_log import RequestLogPlan
from pdforensics.collectors import SOURCES, proc, sockets
from pdforensics.collectors.base import Job, Repeat, Runs, Source, Switch, Target
from pdforensics.model import CommandResult, HostSpec
from pdforensics.parsers.proc import parse_cgroup_unit, parse_ps
from pdforensics.parsers.ss import SocketTable
from pdforensics.sglang.discovery import Discovery, Service, discover
from pdforensics.transport.base import remote_argv

#: Seconds the py-spy dumps of one process should span (see analysis.rules.rank_judgement).
STUCK_SPAN_S = 10.2


@dataclass(frozen=True)
class PlanOptions:
    samples: int = 3
    interval_s: float = 2.0
    stacks: bool = True
    stack_dumps: int = 3  # 3 dumps spanning >= 10 s: what calling a rank stuck needs
    gpu: bool = True
    versions: bool = True
    logs: bool = True
    sglang_source: bool = False  # copy the server's sglang flag/env/metric sources (catalog)
    probes: bool = True  # /health_generate on every server (--no-probes)
    doctor: bool = False  # doctor's host probes (collectors/doctor.py)
    request_log_s: float = 0.0  # --request-log: request logging on for this long (request_log.py)
    flight_recorder: bool = True  # harvest the dumps the ranks' environments name (beneath_plan.py)
    nccl_ras: bool = False  # --nccl-ras: query NCCL RAS once per host
    deep: bool = False  # --deep: cuda-gdb "info cuda kernels" on each rank (stops it while read)

    def on(self, switch: Switch | None) -> bool:
        """Whether a source behind this switch is planned (None: always)."""
        return switch is None or bool(getattr(self, switch.value))


#: the planner's own inputs: discovery runs first and plans the rest
DISCOVERY_SOURCES = (proc.PS, sockets.SS_LISTEN)
#: what discovery found before it ran (the host-wide sources see no services yet)
NOTHING_FOUND = Discovery(processes=(), services=())


def local_py_spy(host: HostSpec) -> HostSpec:
    """On the local host, find py-spy next to our interpreter when it is not on PATH."""
    if host.is_local and host.py_spy == "py-spy" and shutil.which("py-spy") is None:
        candidate = Path(sys.executable).parent / "py-spy"
        if candidate.exists():
            return dataclasses.replace(host, py_spy=str(candidate))
    return host


def make_job(host: HostSpec, source: Source, target: Target, not_before: float = 0.0,
             timeout_s: float | None = None) -> Job:
    """Bind a source to a target: build its argv and wrap it for remote-side timeouts."""
    argv = source.build(host, target)
    url, body = None, None
    if source.scope == "endpoint" and argv and argv[0] == "curl":
        url = argv[-1]
        if "--data-binary" in argv:  # a POST (collectors/request_log.py): sent as given
            body = argv[argv.index("--data-binary") + 1].encode()
    wrapped = remote_argv(argv, timeout_s or source.timeout_s,
                          sudo=host.sudo and source.privileged)
    read = source.reads(host, target) if source.reads is not None else None
    return Job(source=source, target=target, argv=wrapped, not_before=not_before, url=url,
               read=read, body=body)


class HostPlanner:
    """Starts with discovery; plans everything else from what discovery found."""

    def __init__(self, host: HostSpec, options: PlanOptions):
        self.host = local_py_spy(host)
        self.options = options
        self.discovery: Discovery | None = None
        self.discovered_at: float | None = None
        self.tools_failed: list[str] = []  # discovery tools that did not run (ps, ss)
        self._ps_text: str | None = None
        self._listen_text: str | None = None
        self._units_planned: set[str] = set()
        self._once: set[tuple[str, str]] = set()  # (source, its once_per key) planned already
        self._first_dump_at: dict[int, float] = {}  # pid -> when its first py-spy dump started
        self.notes: list[str] = []
        self._lock = threading.Lock()  # on_result is called from every channel's thread
        self.request_log = RequestLogPlan(self.host, options.request_log_s, make_job)
        self.beneath = BeneathPlan(self.host, options, make_job)

    def initial_jobs(self) -> list[Job]:
        """Discovery's reads first, then every host-wide source the options turn on."""
        jobs = [make_job(self.host, src, Target()) for src in DISCOVERY_SOURCES]
        return jobs + self._jobs(Runs.PER_HOST, Target(), NOTHING_FOUND, skip=DISCOVERY_SOURCES)

    def _jobs(self, runs: Runs | tuple[Runs, ...], target: Target, d: Discovery, now: float = 0.0,
              skip: tuple[Source, ...] = ()) -> list[Job]:
        """A job per source that runs this way (registry order) and the options turn on, where
        its `only` holds and its `once_per` key is new; a repeated source starts at sample 1."""
        wanted = runs if isinstance(runs, tuple) else (runs,)
        jobs = []
        for src in SOURCES:
            if src.runs not in wanted or src in skip or not self.options.on(src.switch):
                continue
            if src.only is not None and not src.only(self.host, d, target):
                continue
            if src.once_per is not None:
                key = (src.name, src.once_per(target))
                if key in self._once:
                    continue
                self._once.add(key)
            if src.repeats is None:
                jobs.append(make_job(self.host, src, target))
            else:  # sample n+1 is planned when sample n ends (see on_result)
                jobs.append(make_job(self.host, src, dataclasses.replace(target, sample=1),
                                     not_before=now if src.repeats is Repeat.DUMPS else 0.0))
        return jobs

    @property
    def dump_spacing_s(self) -> float:
        """Time between one process's py-spy dumps: the span of the /metrics samples, and at
        least enough for the dumps to span STUCK_SPAN_S (the analysis calls a stack stuck
        only over >= 3 dumps spanning >= 10 s)."""
        o = self.options
        gaps = max(1, o.stack_dumps - 1)
        return max(2.0, o.interval_s * max(1, o.samples - 1), STUCK_SPAN_S / gaps)

    @property
    def discovered(self) -> bool:
        return self.discovery is not None

    def on_result(self, job: Job, result: CommandResult) -> list[Job]:
        """Follow-up jobs for a finished one; safe to call from many threads at once (ps and
        ss finishing together must not both plan discovery's jobs)."""
        with self._lock:
            follow = (self._on_result(job, result) + self.request_log.on_result(job, result)
                      + self.beneath.on_result(job, result))
            return self.request_log.hold(follow)

    def _on_result(self, job: Job, result: CommandResult) -> list[Job]:
        src = job.source
        if src is proc.PS:
            self._ps_text = result.stdout.decode("utf-8", "replace")
            if not result.ok:
                self.tools_failed.append(proc.PS.name)
                self.notes.append(f"ps failed: {_failure(result)}: the process table is unknown, "
                                  "so no declared service is judged absent")
        elif src is sockets.SS_LISTEN:
            self._listen_text = result.stdout.decode("utf-8", "replace") if result.ok else ""
            if not result.ok:
                self.tools_failed.append("ss")
                self.notes.append(f"ss failed: {_failure(result)}: listening sockets are unknown")
        elif src is proc.CGROUP and result.ok and job.target.process is not None:
            unit = parse_cgroup_unit(result.stdout.decode("utf-8", "replace"))
            svc = self._service_of(job.target.process.pid)
            if unit and svc is not None:
                return self._unit_jobs(unit, svc)
            if svc is not None:
                self.notes.append(f"{svc.label}: not run by a systemd unit; restart times come "
                                  "from process start times (/proc)")
        elif src.repeats is not None and job.target.sample is not None:
            return self._next_sample(job, result)
        elif src.fallback is not None and _http_status(result) == 404:
            return [make_job(self.host, src.fallback, job.target)]
        if self.discovery is None and self._ps_text is not None and self._listen_text is not None:
            return self._plan_after_discovery()
        return []

    def _next_sample(self, job: Job, result: CommandResult) -> list[Job]:
        """/metrics sample n+1 `interval` after sample n began; py-spy dump n+1 in its slot."""
        n = job.target.sample
        assert n is not None
        if job.source.repeats is Repeat.SAMPLES:
            if n >= self.options.samples:
                return []
            return [make_job(self.host, job.source, dataclasses.replace(job.target, sample=n + 1),
                             not_before=result.started_at + self.options.interval_s)]
        if job.target.process is None or n >= max(1, self.options.stack_dumps):
            return []
        # dump n+1 keeps its slot, n x the spacing after discovery
        at = (self.discovered_at or result.started_at) + n * self.dump_spacing_s
        pid = job.target.process.pid
        if n == 1:
            self._first_dump_at[pid] = result.started_at
        if n + 1 == self.options.stack_dumps:  # the last one: span >= STUCK_SPAN_S from the first
            at = max(at, self._first_dump_at.get(pid, result.started_at) + STUCK_SPAN_S)
        return [make_job(self.host, job.source, Target(process=job.target.process, sample=n + 1),
                         not_before=at)]

    def discovery_json(self) -> dict[str, Any]:
        d = self.discovery
        if d is None:
            return {"discovered": False, "notes": self.notes, "tools_failed": self.tools_failed}
        return {"discovered": True, "at": self.discovered_at,
                "notes": self.notes + self.beneath.notes,
                "tools_failed": self.tools_failed,
                "missing": list(d.missing),
                "out_of_scope": [{**asdict(s), "why": why} for s, why in d.out_of_scope],
                "services": [asdict(s) for s in d.services],
                "processes": [asdict(p) for p in d.processes]}

    # -- planning -------------------------------------------------------------------------
    def _plan_after_discovery(self) -> list[Job]:
        from pdforensics.parsers.ss import parse_listening

        now = time.time()
        table = parse_ps(self._ps_text or "")
        listening = parse_listening(self._listen_text or "")
        self.discovery = d = discover(table, self.host.services, _listen_pids(listening), now=now,
                                      listen_addresses=_listen_addresses(listening),
                                      scope_ports=self.host.scope_ports,
                                      all_users=self.host.all_users)
        for svc, why in d.out_of_scope:
            self.notes.append(f"{svc.label} (pid {svc.root_pid}) listed, not captured: {why}")
        if self.host.slurm is not None:  # worker logs of a Slurm job (pdforensics.slurm.logs)
            from pdforensics.slurm.logs import attach_logs

            self.discovery, said = attach_logs(self.host, d)
            d = self.discovery
            self.notes += said
        self.discovered_at = now
        self.request_log.discovered(d.services, d.processes)
        for missing in d.missing:
            self.notes.append(f"declared service {missing}: " + (
                "not checked (ps failed)" if proc.PS.name in self.tools_failed
                else "no SGLang process found on the host"))
        if not d.services and proc.PS.name not in self.tools_failed:
            self.notes.append("no SGLang server or router process found")
        jobs = [*self._jobs(Runs.PER_HOST_DISCOVERED, Target(), d), *self.beneath.after_discovery(d)]
        for svc in d.services:
            jobs += self._service_jobs(svc, d)
        for p in d.processes:
            jobs += self._jobs(Runs.PER_PROCESS, Target(process=p), d, now)
        return jobs

    def _service_jobs(self, svc: Service, d: Discovery) -> list[Job]:
        """A service's endpoint and log sources, then those of its systemd unit."""
        mine = (Runs.PER_SERVICE, Runs.PER_ROUTER if svc.kind == "router" else Runs.PER_SERVER)
        if svc.kind != "router" and not svc.metrics_enabled:
            self.notes.append(f"{svc.label}: started without --enable-metrics; "
                              "/metrics will be empty")
        jobs = self._jobs(mine, Target(service=svc), d)
        if svc.unit:
            jobs += self._unit_jobs(svc.unit, svc)
        return jobs

    def _unit_jobs(self, unit: str, svc: Service) -> list[Job]:
        if unit in self._units_planned:
            return []
        self._units_planned.add(unit)
        return self._jobs(Runs.PER_UNIT, Target(service=svc, unit=unit), self.discovery or NOTHING_FOUND)

    def _service_of(self, pid: int) -> Service | None:
        if self.discovery is None:
            return None
        return next((s for s in self.discovery.services if pid in s.pids), None)


def _listen_pids(table: SocketTable) -> dict[int, set[int]]:
    """Listening port -> pids owning it (needs privilege for other users' sockets)."""
    out: dict[int, set[int]] = {}
    for row in table.rows:
        if row.local.port is not None:
            out.setdefault(row.local.port, set()).update(p.pid for p in row.processes)
    return out


def _listen_addresses(table: SocketTable) -> dict[int, str]:
    """Listening port -> the loopback/host address it is bound to (not for `*` or 0.0.0.0)."""
    return {r.local.port: r.local.addr for r in table.rows if r.local.port is not None
            and r.local.addr not in ("*", "0.0.0.0", "::", "[::]")}


def _http_status(result: CommandResult) -> int | None:
    head = result.stdout[:200].decode("latin-1")
    for line in head.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("HTTP/") and parts[1].isdigit():
            if parts[1] != "100":
                return int(parts[1])
    return None


def target_json(target: Target) -> dict[str, Any]:
    """The part of a target the manifest keeps (enough to re-plan offline)."""
    out: dict[str, Any] = {}
    if target.process is not None:
        p = target.process
        out.update(pid=p.pid, kind=p.kind, rank=p.rank, role=p.role, state=p.state,
                   root_pid=p.root_pid)
    if target.service is not None:
        s = target.service
        out.update(role=s.role, service_kind=s.kind, port=s.port, address=s.address)
    if target.unit:
        out["unit"] = target.unit
    if target.sample is not None:
        out["sample"] = target.sample
    return out


def _failure(result: CommandResult) -> str:
    """Why a command failed, in one line: its error, its last stderr line, or its status."""
    lines = result.stderr.strip().splitlines()
    return result.error or (lines[-1][:200] if lines else f"exit status {result.exit_status}")
