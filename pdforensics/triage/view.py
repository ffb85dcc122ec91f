"""Loose artifacts -> a LoadedCapture the rules can read (synthetic hosts and services).

Services are grouped sensibly: /metrics scrapes of one server (same role, model and
ranks) are one service with several samples; /server_info, logs and stacks join the
service of their role when there is exactly one, else they get their own. Every
synthetic result keeps the file it came from as its path, so evidence points to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdforensics import linear
from pdforensics.analysis.stacks import rank_from_title
from pdforensics.bundle.ondisk import Bundle, ResultEntry
from pdforensics.model import ProcessInfo
from pdforensics.parsers.beneath import Beneath
from pdforensics.parsers.flight_recorder import FrDump
from pdforensics.parsers.frames import ProcessDump
from pdforensics.parsers.http import HttpResponse
from pdforensics.parsers.journal import (
    SignatureHit,
    merge_hits,
    parse_log_timestamp,
    scan_log_signatures,
    written_by_sglang,
)
from pdforensics.parsers.kernel_log import KernelLog
from pdforensics.parsers.prometheus import MetricsSnapshot
from pdforensics.parsers.pyspy import classify_pyspy_error
from pdforensics.triage.logs import role_of
from pdforensics.triage.read import Artifact, log_groups
from pdforensics.views.loaded import (
    Fetch,
    HostView,
    LoadedCapture,
    MetricSample,
    ProcessView,
    ServiceView,
    StackDump,
)
from pdforensics.views.window import line_stamp

_SERVER_ROLES = ("prefill", "decode", "unified")
_SCHEDULER_FRAMES = ("event_loop_normal", "event_loop_overlap", "event_loop_pp",
                     "run_scheduler_process")


@dataclass
class _Svc:
    host: str
    role: str
    kind: str  # server | router
    ident: tuple[object, ...] = ()
    scrapes: list[tuple[str, float | None, MetricsSnapshot]] = field(default_factory=list)
    fetches: dict[str, Fetch] = field(default_factory=dict)
    hits: list[SignatureHit] = field(default_factory=list)
    history: list[SignatureHit] = field(default_factory=list)  # before --since
    log_path: str | None = None
    log_entry: ResultEntry | None = None
    procs: dict[int, list[StackDump]] = field(default_factory=dict)
    infos: dict[int, ProcessInfo] = field(default_factory=dict)
    tp_size: int = 1
    dp_size: int = 1
    beneath: list[Beneath] = field(default_factory=list)


class _Builder:
    def __init__(self, since_epoch: float | None = None) -> None:
        self.since_epoch = since_epoch  # --since: older log lines are history
        self.svcs: list[_Svc] = []
        self.entries: list[ResultEntry] = []
        self.counts: dict[tuple[str, str], int] = {}  # (host, source) -> entries made
        self.notes: list[str] = []
        self.order = 0.0  # synthetic clock for evidence without a time: file order, 1 s apart
        self.real_times: list[float] = []  # times the files themselves state
        self.timed: set[str] = set()  # result keys whose time the files state
        self.kernels: dict[str, KernelLog] = {}  # host -> its kernel log (a loose file)
        self.fr: dict[str, list[tuple[str, FrDump]]] = {}  # host -> Flight Recorder dumps

    # -- bookkeeping ------------------------------------------------------------------------
    def entry(self, host: str, source: str, path: str, taken: float | None) -> ResultEntry:
        n = self.counts.get((host, source), 0)  # (counted, not searched: a dump may hold thousands)
        self.counts[(host, source)] = n + 1
        key = f"{source}.{n}"
        e = ResultEntry(host=host, source=source, key=key, argv=None, url=None, exit_status=0,
                        duration_s=0.0, started_at=taken if taken is not None else self.order,
                        timed_out=False, truncated=False, bytes=0, sha256=None, path=path,
                        error=None)
        if taken is not None:
            self.real_times.append(taken)
            self.timed.add(key)
        self.entries.append(e)
        return e

    def service(self, role: str | None, host: str, kind: str = "server",
                ident: tuple[object, ...] | None = None) -> _Svc:
        """The service for this evidence: same ident, or the one service of that role."""
        if ident is not None:
            for s in self.svcs:
                if s.ident == ident:
                    return s
        else:
            same = [s for s in self.svcs if s.kind == kind and (role is None or s.role == role)]
            if len(same) == 1:
                return same[0]
            ident = ("loose", host, role, kind)  # one service per file (and writer) and role
            for s in self.svcs:
                if s.ident == ident:
                    return s
        s = _Svc(host, role or ("router" if kind == "router" else "unified"), kind, ident)
        self.svcs.append(s)
        return s

    def server_role(self) -> str | None:
        roles = {s.role for s in self.svcs if s.kind == "server"}
        return roles.pop() if len(roles) == 1 else None

    # -- evidence ---------------------------------------------------------------------------
    def metrics(self, art: Artifact) -> None:
        for sc in art.scrapes:
            kind, role, ident = _identity(sc.snapshot)
            svc = self.service(role, _name(art.path), kind, ident)
            svc.scrapes.append((art.path, sc.taken_at, sc.snapshot))

    def server_info(self, art: Artifact) -> None:
        info: dict[str, Any] = art.server_info or {}
        nested = info.get("server_args")
        args: dict[str, Any] = nested if isinstance(nested, dict) else info
        mode = str(args.get("disaggregation_mode") or "null")
        role = mode if mode in ("prefill", "decode") else None
        servers = [s for s in self.svcs if s.kind == "server"]
        unified = [s for s in servers if s.role == "unified"]
        if role is not None and not any(s.role == role for s in servers) and len(unified) == 1:
            svc = unified[0]  # old servers label PD metrics "unified": the mode is the truth
        else:
            svc = self.service(role, _name(art.path))
        if role is not None:
            svc.role = role
        svc.tp_size = _int(args.get("tp_size"), svc.tp_size)
        svc.dp_size = _int(args.get("dp_size"), svc.dp_size)
        e = self.entry(svc.host, "server_info", art.path, art.taken_at)
        body = _dumps(info)
        svc.fetches["server_info"] = Fetch(e.key, "server_info", None, e.started_at, 0.0, False,
                                           None, 0, HttpResponse(200, "OK", "HTTP/1.1", (), body))

    def log(self, art: Artifact) -> None:
        for writer, text in log_groups(art).items():
            w = self.since_epoch
            hits = scan_log_signatures(text, since_epoch=w)
            old = scan_log_signatures(text, until_epoch=w) if w is not None else ()
            if not hits and not old and not written_by_sglang(text):
                continue
            role = role_of(writer) if writer else None
            kind = "router" if role == "router" else "server"
            svc = self.service(role, f"{_name(art.path)}{':' + writer if writer else ''}", kind)
            svc.hits.extend(hits)
            svc.history.extend(old)
            e = self.entry(svc.host, "log_file", art.path, _last_time(text))
            if svc.log_entry is None:
                svc.log_path, svc.log_entry = art.path, e

    def stacks(self, art: Artifact, index: int) -> None:
        default = self.server_role()
        for n, d in enumerate(art.dumps):
            role = _dump_role(d) or default
            svc = self.service(role, _name(art.path) + (f":{d.service}" if d.service else ""))
            pid = d.pid if d.pid is not None else -(index * 1000 + n + 1)
            taken = _watchdog_time(d)
            if taken is None and art.taken_at is not None:
                taken = art.taken_at + 0.001 * n  # one `date` line for the whole file
            self.order = float(index)  # untimed dumps: one file, one moment; files 1 s apart
            e = self.entry(svc.host, "pyspy", art.path, taken)
            failure = classify_pyspy_error(d.error, 1) if d.error else None
            sd = StackDump(e.key, e.started_at, 0.0, () if d.error else (d,), failure, False, None)
            svc.procs.setdefault(pid, []).append(sd)
            if pid not in svc.infos:
                svc.infos[pid] = _info(d, pid, svc.role)

    def beneath(self, art: Artifact) -> None:
        """Readings beneath SGLang: kernel events go to the file's host, the rest (NCCL,
        transfer engine, debugger) to the service of the file's role."""
        b = art.beneath
        if b is None:
            return
        host = _name(art.path)
        if b.kernel:
            self.kernels[host] = KernelLog(b.kernel, b.driver)
            self.entry(host, "kernel_log", art.path, None)
        rest = Beneath(b.watchdog, b.nccl, b.ras, (), None, b.transfer, b.cuda, b.fr_trace, b.top,
                       b.debugger_no_stack)
        if not rest:
            return
        svc = self.service(role_of(host) or self.server_role(), host)
        svc.beneath.append(rest)
        if svc.log_entry is None:
            svc.log_path, svc.log_entry = art.path, self.entry(svc.host, "log_file", art.path, None)

    def flight_recorder(self, art: Artifact) -> None:
        if art.fr_dump is not None:
            self.fr.setdefault("flight recorder", []).append((art.path, art.fr_dump))

    def load(self, art: Artifact) -> None:
        """A load document becomes the fetch of a service, as a capture would have it."""
        doc = art.load
        if doc is None:
            return
        router = doc.kind in ("router_loads", "router_workers")
        role = "router" if router else (doc.role or role_of(_name(art.path)))
        svc = self.service(role, _name(art.path), "router" if router else "server")
        key = {"v1_loads": "loads", "get_load": "get_load", "router_loads": "get_loads",
               "router_workers": "workers", "model_info": "model_info",
               "not_found": "get_load"}[doc.kind]
        e = self.entry(svc.host, key, art.path, art.taken_at)
        status = (404, "Not Found") if doc.kind == "not_found" else (200, "OK")
        svc.fetches[key] = Fetch(e.key, key, None, e.started_at, 0.0, False, None, 0,
                                 HttpResponse(status[0], status[1], "HTTP/1.1", (),
                                              _dumps(art.json_doc)))

    def pyspy_error(self, art: Artifact) -> None:
        """py-spy's failures: per failed dump of a watchdog log (its pid and rank), else one
        for the file (pid 0: unknown)."""
        failed: list[ProcessDump | None] = [d for d in art.dumps if d.error] or [None]
        for d in failed:
            role = (_dump_role(d) if d is not None else None) or self.server_role()
            svc = self.service(role, _name(art.path))
            failure = classify_pyspy_error(d.error, 1) if d is not None and d.error else None
            e = self.entry(svc.host, "pyspy", art.path, _watchdog_time(d) if d else None)
            pid = d.pid if d is not None and d.pid is not None else 0
            svc.procs.setdefault(pid, []).append(StackDump(
                e.key, e.started_at, 0.0, (), failure or art.pyspy_failure, False, None))
            rank = d.rank if d is not None else None
            svc.infos.setdefault(pid, ProcessInfo(pid, 0, "", None, 0, 0, "",
                                                  "scheduler" if rank else "server",
                                                  _role(svc.role), None, rank))

    # -- output -----------------------------------------------------------------------------
    def capture(self) -> LoadedCapture:
        hosts: dict[str, list[ServiceView]] = {}
        procs: dict[str, list[ProcessView]] = {}
        for s in self.svcs:
            view = self._view(s)
            hosts.setdefault(s.host, []).append(view)
            procs.setdefault(s.host, []).extend(view.processes)
        for h in [*self.kernels, *self.fr]:
            hosts.setdefault(h, [])
            procs.setdefault(h, [])
        host_views = tuple(
            HostView(name=h, address="", reachable=True, error=None, simulated_gpu=False,
                     discovered=False, notes=(), services=tuple(svcs),
                     processes=tuple(procs[h]), gpus=(), gpu_apps=(),
                     gpu_error="not in the files given",
                     xids=self.kernels[h].xids if h in self.kernels else (), established=None,
                     packages={}, uname=None, kernel=self.kernels.get(h),
                     kernel_source="kernel_log" if h in self.kernels else None,
                     flight_recorder=tuple(self.fr.get(h, ())))
            for h, svcs in hosts.items())
        # "the capture" happened when the newest file was taken (0: unknown, rules use now)
        when = max(self.real_times, default=0.0)
        manifest: dict[str, Any] = {"cluster": "triage", "status": "complete"}
        return LoadedCapture(
            bundle=Bundle(Path("."), manifest, tuple(self.entries)), cluster="triage",
            status="complete", started_at=when, finished_at=when, partial_reasons=(),
            hosts=host_views)

    def _view(self, s: _Svc) -> ServiceView:
        samples = self._samples(s)
        untimed = [pid for pid, sds in s.procs.items()
                   if len(sds) > 1 and any(sd.key not in self.timed for sd in sds)]
        if untimed:
            self.notes.append(f"{s.host}: {len(untimed)} process(es) dumped more than once "
                              "without a time inside; the files taken 1 s apart in the order given")
        processes = tuple(
            ProcessView(info=s.infos[pid], stacks=tuple(sorted(sds, key=lambda x: x.taken_at)))
            for pid, sds in s.procs.items())
        return ServiceView(
            host=s.host, role=s.role, kind=s.kind, port=0, address="", root_pid=None,
            declared=False, tp_size=s.tp_size, dp_size=s.dp_size, unit=None,
            log_file=s.log_path, metrics_port=None, metrics=samples, fetches=dict(s.fetches),
            processes=processes, systemd=None, unit_file=None,
            log_hits=merge_hits(s.hits),
            log_source="log_file" if s.hits or s.history or s.beneath else None,
            log_entry=s.log_entry, log_history=merge_hits(s.history),
            window_start=self.since_epoch, window_from="--since" if self.since_epoch else None,
            beneath=_merge_beneath(s.beneath))

    def _samples(self, s: _Svc) -> tuple[MetricSample, ...]:
        known = all(t is not None for _p, t, _s in s.scrapes)
        rows = sorted(s.scrapes, key=lambda r: r[1] or 0.0) if known else list(s.scrapes)
        if not known and len(rows) > 1:
            self.notes.append(f"{s.host} {s.role}: {len(rows)} /metrics scrapes without a time "
                              "inside; taken 1 s apart in the order given")
        out = []
        for i, (path, t, snap) in enumerate(rows):
            taken = t if known and t is not None else float(i)
            e = self.entry(s.host, "metrics", path, taken)
            f = Fetch(e.key, "metrics", None, taken, 0.0, False, None, 0,
                      HttpResponse(200, "OK", "HTTP/1.1", (), b""))
            out.append(MetricSample(e.key, taken, f, snap))
        return tuple(out)


def _identity(snap: MetricsSnapshot) -> tuple[str, str | None, tuple[object, ...]]:
    """(kind, role, ident) of the server a scrape came from, from its own labels."""
    names = {s.name for s in snap.samples}
    router = any(n.startswith(("smg_", "sgl_router_")) for n in names)
    engine = sorted({v for s in snap.samples if (v := s.label("engine_type"))})
    models = sorted({v for s in snap.samples if (v := s.label("model_name"))})
    ranks = sorted({f"{s.label('dp_rank')}/{s.label('tp_rank')}/{s.label('pp_rank')}"
                    for s in snap.samples if s.name.startswith("sglang")})
    role = next((r for r in engine if r in ("prefill", "decode")), engine[0] if engine else None)
    if router:  # a gateway re-exports its workers' engine metrics (engine_type labels too)
        return "router", "router", ("router", tuple(models))
    return "server", role, ("server", role, tuple(models), tuple(ranks))


def _info(d: ProcessDump, pid: int, role: str) -> ProcessInfo:
    rank = d.rank or rank_from_title(d.command)
    sched = "scheduler" in d.command or rank is not None or any(
        f.function in _SCHEDULER_FRAMES for t in d.threads for f in t.frames)
    if sched and rank is None:
        rank = f"PID{pid}"
    return ProcessInfo(pid, d.parent_pid or 0, "", None, len(d.threads), 0, d.command,
                       "scheduler" if sched else "other", _role(role), None, rank)


def _role(role: str) -> Any:
    return role if role in ("router", *_SERVER_ROLES) else None


_MODE = linear.compile(r"--disaggregation-mode[ =](prefill|decode)")


def _dump_role(d: ProcessDump | None) -> str | None:
    """The role a dump names itself: its compose service, or its command line's PD mode."""
    if d is None:
        return None
    m = _MODE.search(d.command) or _MODE.search(d.parent_command)
    if m is not None:
        return m.group(1)
    role = role_of(d.service) if d.service else None
    return role if role in _SERVER_ROLES else None


def _watchdog_time(d: ProcessDump | None) -> float | None:
    return parse_log_timestamp(d.timestamp) if d is not None and d.timestamp else None


def _last_time(text: str) -> float | None:
    for line in reversed(text.split("\n")[-200:]):
        t = parse_log_timestamp(line)
        if t is not None:
            return t
    return None


def _merge_beneath(parts: Sequence[Beneath]) -> Beneath | None:
    """One service's readings from several files, concatenated."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    ras = next((p.ras for p in parts if p.ras is not None), None)
    top = next((p.top for p in parts if p.top is not None), None)
    gdb = next((p.debugger_no_stack for p in parts if p.debugger_no_stack is not None), None)
    return Beneath(tuple(r for p in parts for r in p.watchdog), tuple(n for p in parts for n in p.nccl),
                   ras, (), None, tuple(t for p in parts for t in p.transfer),
                   tuple(c for p in parts for c in p.cuda), tuple(f for p in parts for f in p.fr_trace),
                   top, gdb, tuple(m for p in parts for m in p.coll))


def _name(path: str) -> str:
    return "stdin" if path == "-" else Path(path).name


def _int(v: object, default: int) -> int:
    try:
        return max(1, int(str(v)))
    except (TypeError, ValueError):
        return default


def _dumps(obj: object) -> bytes:
    import json

    return json.dumps(obj).encode("utf-8")


def newest_time(artifacts: Sequence[Artifact]) -> float | None:
    """The newest time the files themselves state (log lines, scrapes, dumps)."""
    times = [t for a in artifacts for t in (a.taken_at, *(h.last_epoch for h in a.log_hits),
                                            *(x.taken_at for x in a.scrapes),
                                            _last_stamp(a.text) if a.kind == "log" else None)
             if t is not None]
    return max(times, default=None)


def _last_stamp(text: str, lines: int = 200) -> float | None:
    """The time of a log's last stamped line (among its last ``lines``): a log that went on
    serving after its last failure states a newer time than its signatures do."""
    for line in reversed(text[-(lines * 400):].split("\n")[-lines:]):
        stamp = line_stamp(line)
        if stamp is not None:
            return stamp
    return None


def build_capture(artifacts: Sequence[Artifact], since_epoch: float | None = None
                  ) -> tuple[LoadedCapture, tuple[str, ...]]:
    """The capture view of every readable artifact (goroutine dumps go beside it as clients);
    with ``since_epoch`` log lines before it are history."""
    b = _Builder(since_epoch)
    readable = [a for a in artifacts if a.usable]
    for a in readable:  # servers first: their roles decide where logs and stacks go
        if a.kind == "metrics":
            b.metrics(a)
    for a in readable:
        if a.kind == "server_info":
            b.server_info(a)
    for a in readable:
        if a.kind == "log" or a.log_hits:  # watchdog logs hold signatures beside their dumps
            b.log(a)
    for i, a in enumerate(readable, 1):
        if a.kind == "stacks":
            b.stacks(a, i)
        elif a.kind == "pyspy_error":
            b.pyspy_error(a)
        elif a.kind == "flight_recorder":
            b.flight_recorder(a)
        elif a.kind == "load":
            b.load(a)
        b.beneath(a)
    return b.capture(), tuple(b.notes)
