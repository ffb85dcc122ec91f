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

from pdforensics.bundle.ondisk import BundleWriter, ResultEntry
from pdforensics.capture.beneath_plan import deep_record
from pdforensics.capture.deadline import Deadline
from pdforensics.capture.host_run import DEFAULT_CHANNELS, HostRun, Progress
from pdforensics.capture.planner import PlanOptions, target_json
from pdforensics.capture.request_log import restore_all
from pdforensics.errors import Interrupted
from pdforensics.model import ClusterSpec, CommandResult
from pdforensics.redact.redactor import Redactor
from pdforensics.views.readings import BackgroundParser
from pdforensics.views.window import Since

# Extra evidence gathered beside the hosts (e.g. Prometheus history): called on its own
# thread with the writer and the capture's deadline; adds results only through the writer.
Sidecar = Callable[[BundleWriter, Deadline], None]


@dataclass(frozen=True)
class CaptureOptions:
    out_dir: Path
    deadline_s: float = 60.0
    plan: PlanOptions = field(default_factory=PlanOptions)
    channels: int = DEFAULT_CHANNELS
    archive: bool = False  # BUNDLE.tar.gz once finished (app/finish.py), the capture's default
    accept_new_host_keys: bool = False
    connect_timeout_s: float = 10.0
    profile: str = "full"
    since: Since | None = None  # --since: where the evidence window starts (views/window.py)


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
    deadline = Deadline(t0 + options.deadline_s, options.deadline_s)
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
                while run.thread.is_alive() and time.monotonic() < deadline.wait_until():
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
        t.join(timeout=max(0.5, deadline.left()))
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
        run.write_held()  # a host still running at the deadline: its held dumps keep their rows
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
    from pdforensics.capture.completeness import NOTHING_COLLECTED, collection_reasons

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
                    "probes": options.plan.probes,
                    **({"since": options.since.text, "since_epoch": options.since.at(started)}
                       if options.since is not None else {})},
        "hosts": [{"name": h.name, "address": h.address, "reachable": h.reachable,
                   "error": h.error, "jobs_run": h.jobs_run, "jobs_not_run": h.jobs_not_run,
                   "simulated_gpu": spec.simulated_gpu, "sudo": spec.sudo,
                   "fallbacks": run.files.fallbacks, "runner": run.runner_said(),
                   "services": [{"role": s.role, "port": s.port, "unit": s.unit,
                                 "metrics_port": s.metrics_port, "log_file": s.log_file}
                                for s in spec.services]}
                  for h, spec in zip(hosts, cluster.hosts, strict=True)],
        "interrupted": interrupted is not None,
        **({"slurm": cluster.extra["slurm"]} if "slurm" in cluster.extra else {}),
        **(extra_manifest or {}),
    }
    manifest["options"]["nccl_ras"] = options.plan.nccl_ras
    if options.plan.deep:
        manifest["deep"] = deep_record(writer.entries())
    if options.plan.request_log_s:
        manifest["options"]["request_log_s"] = options.plan.request_log_s
        manifest["request_log"] = {"servers": [row for r in runs for row in r.planner.request_log.rows()],
                                   "left_on": left_on}
    parser.finish(rewritten)
    bundle = writer.finalise(manifest)
    outcome = CaptureOutcome(bundle=bundle, status=str(manifest["status"]),
                             partial_reasons=tuple(manifest["partial_reasons"]),
                             hosts=tuple(hosts), entries=tuple(writer.entries()),
                             duration_s=time.monotonic() - t0,
                             request_log_left_on=tuple(left_on))
    if interrupted is not None:
        raise Interrupted(interrupted, str(bundle), detail="; ".join(left_on) or None)
    return outcome


def outcome_json(outcome: CaptureOutcome) -> dict[str, Any]:
    from pdforensics.capture.completeness import is_expected_absence, server_hung

    return {"bundle": str(outcome.bundle), "status": outcome.status,
            "partial_reasons": list(outcome.partial_reasons),
            "request_log_left_on": list(outcome.request_log_left_on),
            "hosts": [asdict(h) | {"discovery": None} for h in outcome.hosts],
            "gaps": [_gap(e) for e in outcome.gaps if not is_expected_absence(e, outcome.bundle)
                     and not server_hung(e)],
            "hung": [f"{e.host} {e.key}: no answer after {e.duration_s:.1f} s" for e in outcome.gaps
                     if server_hung(e)],
            "expected_absent": [f"{e.host} {e.key}" for e in outcome.gaps
                                if is_expected_absence(e, outcome.bundle)]}


def _gap(e: ResultEntry) -> dict[str, Any]:
    why = e.error or ("timed out" if e.timed_out else
                      f"output cut at {e.bytes} bytes (the cap); the command was stopped" if e.truncated
                      else f"exit status {e.exit_status}")
    return {"host": e.host, "source": e.source, "key": e.key, "error": why,
            "stderr": e.stderr.strip().splitlines()[-1][:300] if e.stderr.strip() else ""}
