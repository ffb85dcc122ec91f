"""Run a capture: every host at once, each on one connection with bounded channels."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from pdforensics.bundle import BundleWriter, ResultEntry
from pdforensics.collectors.base import CHEAP, DISCOVERY, SLOW, Job
from pdforensics.errors import Interrupted, PdforensicsError
from pdforensics.model import ClusterSpec, CommandResult, HostSpec
from pdforensics.planner import HostPlanner, PlanOptions, target_json
from pdforensics.readings import BackgroundParser
from pdforensics.redact import Redactor
from pdforensics.request_log import restore_all
from pdforensics.transport import open_transport
from pdforensics.transport.banner import banner_note, probe_banner, strip_banner
from pdforensics.transport.base import Transport

# A stock sshd allows 10 sessions per connection, and a closed session lingers there until
# its process exits: stay well under it.
DEFAULT_CHANNELS = 6
# Channels kept free of slow, hang-prone calls so the cheap evidence never queues behind them.
RESERVED_FOR_CHEAP = 2
# Reads whose timeout says nothing about the cluster (a /proc file, the process table): on a
# timeout with no output they run once more, time permitting.
RETRIED_SOURCES = frozenset({"ps", "ss_listen", "cmdline", "environ", "cgroup"})
# Margin kept between a job's own timeout and the global deadline (kill grace + transfer).
DEADLINE_MARGIN_S = 4.0

Progress = Callable[[str, str], None]
# Extra evidence gathered beside the hosts (e.g. Prometheus history): called on its own
# thread with the writer and the monotonic deadline; adds results only through the writer.
Sidecar = Callable[[BundleWriter, float], None]


@dataclass(frozen=True)
class CaptureOptions:
    out_dir: Path
    deadline_s: float = 60.0
    plan: PlanOptions = field(default_factory=PlanOptions)
    channels: int = DEFAULT_CHANNELS
    archive: bool = False
    accept_new_host_keys: bool = False
    connect_timeout_s: float = 10.0
    profile: str = "full"


@dataclass(frozen=True)
class HostOutcome:
    name: str
    address: str
    reachable: bool
    error: str | None
    jobs_run: int
    jobs_not_run: int
    discovery: dict[str, Any]


@dataclass(frozen=True)
class CaptureOutcome:
    bundle: Path
    status: str  # complete | partial
    partial_reasons: tuple[str, ...]
    hosts: tuple[HostOutcome, ...]
    entries: tuple[ResultEntry, ...]
    duration_s: float
    # --request-log: servers whose request logging could not be put back (an error)
    request_log_left_on: tuple[str, ...] = ()

    @property
    def gaps(self) -> list[ResultEntry]:
        return [e for e in self.entries if not e.ok]


class HostRun:
    """Drives one host: connect, then run planned jobs on up to N concurrent channels."""

    def __init__(self, host: HostSpec, options: CaptureOptions, writer: BundleWriter,
                 deadline: float, stop: threading.Event, progress: Progress | None,
                 parser: BackgroundParser):
        self.host = host
        self.options = options
        self.writer = writer
        self.parser = parser
        self.deadline = deadline
        self.stop = stop
        self.progress = progress
        self.planner = HostPlanner(host, options.plan)
        self.planner.request_log.deadline = deadline
        self.transport: Transport | None = None
        self.error: str | None = None
        self.reachable = False
        self.jobs_run = 0
        self.lost = False  # the connection dropped mid-capture
        self._retried: set[str] = set()
        self._said_curl = False
        self._said_found = False  # "found N services" is said once per host
        self.banner = b""  # what the login shell prints before every command
        self._pending: list[Job] = []
        self._inflight = 0
        self._slow_inflight = 0
        self._environ_inflight = 0  # environ reads running: text sources wait (redact.py learns from them)
        self._cond = threading.Condition()
        self.thread = threading.Thread(target=self._main, name=f"host-{host.name}", daemon=True)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        with self._cond:
            self._cond.notify_all()

    def not_run(self) -> list[Job]:
        with self._cond:
            return list(self._pending)

    def _main(self) -> None:
        t0 = time.time()
        try:
            self.transport = open_transport(self.host, self.options.accept_new_host_keys)
            budget = min(self.options.connect_timeout_s, self.deadline - time.monotonic() - 1)
            self.transport.connect(max(1.0, budget))
            self.reachable = True
            self._probe_banner()
        except PdforensicsError as exc:
            self.error = str(exc)
        except Exception as exc:  # paramiko can raise odd things on hostile peers
            self.error = f"{self.host.name}: connection failed: {type(exc).__name__}: {exc}"
        if self.error:
            self.writer.add(CommandResult(
                host=self.host.name, source="connect", argv=("ssh", self.host.address),
                exit_status=None, stdout=b"", stderr="", duration_s=time.time() - t0,
                started_at=t0, error=self.error), key="connect")
            self._say("unreachable: " + self.error)
            return
        self._pending = self.planner.initial_jobs()
        workers = [threading.Thread(target=self._worker, daemon=True,
                                    name=f"{self.host.name}-ch{i}")
                   for i in range(max(1, self.options.channels))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self._say(f"done: {self.jobs_run} results" +
                  (f", {len(self._pending)} not run" if self._pending else ""))

    def _probe_banner(self) -> None:
        from pdforensics.transport.ssh import SshTransport

        if isinstance(self.transport, SshTransport):
            self.banner = probe_banner(self.transport)
            if self.banner:
                self.planner.notes.append(banner_note(self.banner))

    # -- scheduling -----------------------------------------------------------------------
    def _next_job(self) -> Job | None:
        """Block until a job may start; None when the host is finished or time is up."""
        with self._cond:
            while True:
                if self.stop.is_set() or time.monotonic() >= self.deadline - 1.0:
                    self._cond.notify_all()
                    return None
                if not self._pending and self._inflight == 0:
                    self._cond.notify_all()
                    return None
                now = time.time()
                job = self._pick(now)
                if job is not None:
                    self._pending.remove(job)
                    self._inflight += 1
                    if job.priority >= SLOW:
                        self._slow_inflight += 1
                    self._environ_inflight += job.source.redact_environ
                    return job
                waits = [j.not_before - now for j in self._pending if j.not_before > now]
                self._cond.wait(timeout=min([0.5, *waits]) if waits else 0.5)

    def _pick(self, now: float) -> Job | None:
        ready = [j for j in self._pending if j.not_before <= now]
        if not self.planner.discovered:
            # slow, hang-prone calls wait for discovery so cheap evidence goes first
            ready = [j for j in ready if j.priority < SLOW]
        if self._slow_inflight >= max(1, self.options.channels - RESERVED_FOR_CHEAP):
            ready = [j for j in ready if j.priority < SLOW]
        if self._environ_inflight or any(j.source.redact_environ for j in self._pending):
            # secrets learned from this host's environ must be known before its logs, stacks and
            # endpoint bodies are written: nothing unredacted reaches disk, even under SIGKILL
            ready = [j for j in ready if j.priority <= CHEAP]
        if not ready:
            return None
        return min(ready, key=lambda j: (j.priority, j.not_before))

    def _worker(self) -> None:
        assert self.transport is not None
        while True:
            job = self._next_job()
            if job is None:
                return
            remaining = self.deadline - time.monotonic() - DEADLINE_MARGIN_S
            timeout = max(1.0, min(job.source.timeout_s, remaining))
            if timeout < job.source.timeout_s:
                job = _with_timeout(self.host, job, timeout)
            result = self._execute(job, timeout)
            if self._retry(job, result):
                continue
            result = self._record(job, result)
            try:
                follow = self.planner.on_result(job, result)
            except PdforensicsError as exc:
                follow = []
                self.planner.notes.append(f"planning after {job.key} failed: {exc}")
            d = self.planner.discovery
            if job.priority == DISCOVERY and d is not None and follow and not self._said_found:
                self._said_found = True  # said once, and before the follow-up jobs run
                self._say(f"found {len(d.services)} service(s), {len(d.processes)} process(es)")
            with self._cond:
                self.jobs_run += 1
                self._inflight -= 1
                self._environ_inflight -= job.source.redact_environ
                if job.priority >= SLOW:
                    self._slow_inflight -= 1
                self._pending.extend(follow)
                self._cond.notify_all()
            self._tick(job)

    def _execute(self, job: Job, timeout: float) -> CommandResult:
        """Run one job: an endpoint through the connection when it can, else its command."""
        assert self.transport is not None
        result = self._fetch(job, timeout) if job.url else None
        if result is None:
            result = strip_banner(self.transport.run(job.source.name, job.argv, timeout,
                                                     job.source.max_bytes), self.banner)
        if result.error == "connection lost":
            self.lost = True
        return result

    def _record(self, job: Job, result: CommandResult) -> CommandResult:
        """Write a result's row and output; hand it to the background parser."""
        if result.exit_status in job.source.timeout_exits and not result.timed_out:
            result = _replace(result, timed_out=True)
        sent = {"sent": job.body.decode("utf-8", "replace")} if job.body is not None else {}
        entry = self.writer.add(result, key=job.key, url=job.url, extension=job.source.extension,
                                environ=job.source.redact_environ,
                                target=target_json(job.target) | sent)
        self.parser.submit(entry)
        return result

    # -- the capture's finally (request_log.restore_all) ----------------------------------
    def pending_keys(self) -> set[str]:
        with self._cond:
            return {j.key for j in self._pending}

    def take_pending(self, wanted: Callable[[Job], bool]) -> list[Job]:
        with self._cond:
            taken = [j for j in self._pending if wanted(j)]
            self._pending = [j for j in self._pending if not wanted(j)]
            return taken

    def add_pending(self, jobs: list[Job]) -> None:
        with self._cond:
            self._pending.extend(jobs)

    def run_now(self, job: Job) -> None:
        """Run one job on the calling thread, after the stop (a restore that must happen)."""
        if self.transport is None:
            return
        result = self._record(job, self._execute(job, job.source.timeout_s))
        self.add_pending(self.planner.on_result(job, result))

    def _fetch(self, job: Job, timeout: float) -> CommandResult | None:
        """An endpoint through the SSH connection itself (no curl process on the host), within
        curl's --max-time; None when the transport cannot, and the curl command runs instead."""
        assert self.transport is not None and job.url is not None
        wait = max(1.0, timeout - 2.0)
        result = (self.transport.fetch(job.source.name, job.url, wait, job.source.max_bytes)
                  if job.body is None else
                  self.transport.fetch(job.source.name, job.url, wait, job.source.max_bytes, body=job.body))
        if result is None and self.transport.forwarding_refused \
                and not self._said_curl:
            self._said_curl = True
            self.planner.notes.append("sshd refused port forwarding (AllowTcpForwarding?): HTTP "
                                      "endpoints fetched with curl on the host instead")
        return result

    def _retry(self, job: Job, result: CommandResult) -> bool:
        """Run a cheap read once more when it timed out with nothing: on a loaded host the
        session start (the login shell's rc files) can eat the whole timeout of a /proc read.
        The first attempt is kept as a planner note; True when the job went back in the queue."""
        if (job.source.name not in RETRIED_SOURCES or not result.timed_out or result.stdout
                or job.key in self._retried
                or self.deadline - time.monotonic() < job.source.timeout_s + DEADLINE_MARGIN_S + 4):
            return False
        self._retried.add(job.key)
        self.planner.notes.append(f"{job.key}: timed out after {result.duration_s:.1f} s with no output; "
                                  "retried once")
        with self._cond:
            self._inflight -= 1
            self._environ_inflight -= job.source.redact_environ
            self._pending.append(job)
            self._cond.notify_all()
        return True

    def _tick(self, job: Job) -> None:
        """Tell a live progress display (one with a ``tick`` method) what this host is doing."""
        tick = getattr(self.progress, "tick", None)
        if tick is not None:
            with self._cond:
                planned = self.jobs_run + self._inflight + len(self._pending)
                phases = [j.priority for j in self._pending] + [job.priority]
            tick(self.host.name, job.source.name, min(phases), self.jobs_run, planned)

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(self.host.name, text)


def _with_timeout(host: HostSpec, job: Job, timeout: float) -> Job:
    from pdforensics.planner import make_job

    return make_job(host, job.source, job.target, job.not_before, timeout_s=timeout)


def _replace(result: CommandResult, **changes: Any) -> CommandResult:
    return CommandResult(**{**result.__dict__, **changes})


class _Terminated(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


# SIGHUP is a dropped bastion/SSH session: handled like SIGTERM, the partial bundle is kept.
_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    """SIGTERM or SIGHUP ends a capture like Ctrl-C does: partial bundle written, then exit
    128 + the signal number."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated(signum)

    old = {sig: signal.signal(sig, handler) for sig in _ENDING_SIGNALS}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def run_capture(cluster: ClusterSpec, options: CaptureOptions,
                progress: Progress | None = None, redactor: Redactor | None = None,
                extra_manifest: dict[str, Any] | None = None,
                sidecars: Sequence[Sidecar] = ()) -> CaptureOutcome:
    """Capture every host of the cluster into a new bundle, within the deadline."""
    started = time.time()
    t0 = time.monotonic()
    deadline = t0 + options.deadline_s
    writer = BundleWriter(options.out_dir, cluster.name, redactor or Redactor(), started)
    stop = threading.Event()
    parser = BackgroundParser(writer)
    runs = [HostRun(h, options, writer, deadline, stop, progress, parser) for h in cluster.hosts]
    side = [threading.Thread(target=s, args=(writer, deadline), daemon=True, name="sidecar")
            for s in sidecars]
    interrupted: int | None = None
    with _sigterm_as_exception():
        try:
            for t in side:
                t.start()
            for run in runs:
                run.start()
            for run in runs:
                while run.thread.is_alive() and time.monotonic() < deadline + 1.0:
                    run.thread.join(timeout=0.2)
        except KeyboardInterrupt:
            interrupted = signal.SIGINT
        except _Terminated as exc:
            interrupted = exc.signum
        finally:  # --request-log: what the capture switched on is put back, whatever happened
            stop.set()
            late = restore_all(runs)
    interrupted = interrupted if interrupted is not None else late
    for run in runs:
        run.close()
    for run in runs:
        run.thread.join(timeout=2.0)
    for t in side:
        t.join(timeout=max(0.5, deadline - time.monotonic()))
    return _finalise(cluster, options, writer, runs, started, t0, interrupted, extra_manifest,
                     parser)


def _finalise(cluster: ClusterSpec, options: CaptureOptions, writer: BundleWriter,
              runs: list[HostRun], started: float, t0: float, interrupted: int | None,
              extra_manifest: dict[str, Any] | None, parser: BackgroundParser) -> CaptureOutcome:
    reasons: list[str] = []
    if interrupted is not None:
        reasons.append(f"interrupted by {signal.Signals(interrupted).name}")
    hosts = []
    for run in runs:
        not_run = run.not_run()
        if run.error:
            reasons.append(f"{run.host.name}: unreachable")
        elif run.lost:
            reasons.append(f"{run.host.name}: connection lost during the capture")
        elif run.thread.is_alive():
            reasons.append(f"{run.host.name}: still collecting at the deadline")
        if not_run and interrupted is None:
            reasons.append(f"{run.host.name}: {len(not_run)} collector(s) not run before the "
                           f"deadline ({options.deadline_s:g}s)")
        for job in not_run:
            writer.add(CommandResult(
                host=run.host.name, source=job.source.name, argv=job.argv, exit_status=None,
                stdout=b"", stderr="", duration_s=0.0, started_at=time.time(),
                error="not run: " + ("interrupted" if interrupted else "deadline reached")),
                key=job.key, url=job.url, target=target_json(job.target))
        disc = run.planner.discovery_json()
        writer.write_json(f"parsed/{run.host.name}/discovery.json", disc)
        hosts.append(HostOutcome(run.host.name, run.host.address, run.reachable, run.error,
                                 run.jobs_run, len(not_run), disc))
    from pdforensics.completeness import NOTHING_COLLECTED, collection_reasons

    left_on = [line for r in runs for line in r.planner.request_log.left_on()]
    reasons += [*(f"{line.split(';')[0]}" for line in left_on),
                *(g for r in runs for g in r.planner.request_log.gaps())]
    cut_off = [r.host.name for r in runs if r.error or r.lost]
    reasons += collection_reasons(writer.entries(), writer.tmp, unreachable=cut_off)
    if runs and all(r.error for r in runs):
        reasons.insert(0, NOTHING_COLLECTED)
    parser.drain()  # no parse reads a raw file while the rescrub below rewrites it
    rewritten = writer.rescrub()
    status = "partial" if reasons else "complete"
    manifest: dict[str, Any] = {
        "status": status, "partial_reasons": reasons, "profile": options.profile,
        "options": {"deadline_s": options.deadline_s, "samples": options.plan.samples,
                    "interval_s": options.plan.interval_s, "stacks": options.plan.stacks,
                    "stack_dumps": options.plan.stack_dumps, "channels": options.channels,
                    "probes": options.plan.probes},
        "hosts": [{"name": h.name, "address": h.address, "reachable": h.reachable,
                   "error": h.error, "jobs_run": h.jobs_run, "jobs_not_run": h.jobs_not_run,
                   "simulated_gpu": spec.simulated_gpu, "sudo": spec.sudo,
                   "services": [{"role": s.role, "port": s.port, "unit": s.unit,
                                 "metrics_port": s.metrics_port, "log_file": s.log_file}
                                for s in spec.services]}
                  for h, spec in zip(hosts, cluster.hosts, strict=True)],
        "interrupted": interrupted is not None,
        **(extra_manifest or {}),
    }
    if options.plan.request_log_s:
        manifest["options"]["request_log_s"] = options.plan.request_log_s
        manifest["request_log"] = {"servers": [row for r in runs for row in r.planner.request_log.rows()],
                                   "left_on": left_on}
    parser.finish(rewritten)
    bundle = writer.finalise(manifest, archive=options.archive)
    outcome = CaptureOutcome(bundle=bundle, status=str(manifest["status"]),
                             partial_reasons=tuple(manifest["partial_reasons"]),
                             hosts=tuple(hosts), entries=tuple(writer.entries()),
                             duration_s=time.monotonic() - t0,
                             request_log_left_on=tuple(left_on))
    if interrupted is not None:
        raise Interrupted(interrupted, str(bundle), detail="; ".join(left_on) or None)
    return outcome


def outcome_json(outcome: CaptureOutcome) -> dict[str, Any]:
    from pdforensics.completeness import is_expected_absence

    return {"bundle": str(outcome.bundle), "status": outcome.status,
            "partial_reasons": list(outcome.partial_reasons),
            "request_log_left_on": list(outcome.request_log_left_on),
            "hosts": [asdict(h) | {"discovery": None} for h in outcome.hosts],
            "gaps": [_gap(e) for e in outcome.gaps if not is_expected_absence(e, outcome.bundle)],
            "expected_absent": [f"{e.host} {e.key}" for e in outcome.gaps
                                if is_expected_absence(e, outcome.bundle)]}


def _gap(e: ResultEntry) -> dict[str, Any]:
    why = e.error or ("timed out" if e.timed_out else
                      f"output cut at {e.bytes} bytes (the cap); the command was stopped" if e.truncated
                      else f"exit status {e.exit_status}")
    return {"host": e.host, "source": e.source, "key": e.key, "error": why,
            "stderr": e.stderr.strip().splitlines()[-1][:300] if e.stderr.strip() else ""}
