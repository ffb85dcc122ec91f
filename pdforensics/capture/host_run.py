"""One host's part of a capture: its connection, its planner and its bounded channels."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pdforensics.bundle.ondisk import BundleClosed, BundleWriter
from pdforensics.capture.deadline import Deadline
from pdforensics.capture.file_reads import FileReads
from pdforensics.capture.job_queue import DUMP_QUIET_S, JobQueue
from pdforensics.capture.planner import HostPlanner, target_json
from pdforensics.collectors.base import CHEAP, DISCOVERY, STACKS, Job
from pdforensics.errors import PdforensicsError
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport import open_transport
from pdforensics.transport.banner import banner_note, probe_banner, strip_banner
from pdforensics.transport.base import Transport
from pdforensics.views.readings import BackgroundParser

if TYPE_CHECKING:
    from pdforensics.capture.run import CaptureOptions
    from pdforensics.transport.runner import SessionRunner

# A stock sshd allows 10 sessions per connection, and a closed session lingers there until
# its process exits: stay well under it.
DEFAULT_CHANNELS = 6
__all__ = ["DEFAULT_CHANNELS", "DUMP_QUIET_S", "HostRun", "Progress", "held_back"]

Progress = Callable[[str, str], None]


class HostRun:
    """Drives one host: connect, then run planned jobs on up to N concurrent channels."""

    def __init__(self, host: HostSpec, options: CaptureOptions, writer: BundleWriter,
                 deadline: Deadline, stop: threading.Event, progress: Progress | None,
                 parser: BackgroundParser):
        self.host = host
        self.options = options
        self.writer = writer
        self.parser = parser
        self.deadline = deadline
        self.stop = stop
        self.progress = progress
        self.planner = HostPlanner(host, options.plan)
        self.files = FileReads(host, self.planner.notes)  # file-read sources: SFTP, or their command as fallback
        self.planner.request_log.deadline = deadline
        self.transport: Transport | None = None
        self.error: str | None = None
        self.reachable = False
        self.jobs_run = 0
        self.lost = False  # the connection dropped mid-capture
        self._retried: set[str] = set()
        self._said_curl = False
        self._said_found = False  # "found N services" is said once per host
        self.banner = b""  # what the login shell prints before each command (runner up: cut by the transport)
        self._runner_said = False
        self.queue = JobQueue(options.channels, lambda: self.planner.discovered)
        self._cond = self.queue.cond  # also guards jobs_run, the held results, _environ_empty
        self._held: list[tuple[Job, CommandResult, str | None]] = []  # first dumps done before environ
        self._environ_empty = False  # an environ read came back with nothing (its secrets unknown)
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
        return self.queue.pending()

    def _main(self) -> None:
        t0 = time.time()
        try:
            self.transport = open_transport(self.host, self.options.accept_new_host_keys)
            self.transport.connect(self.deadline.connect_timeout(self.options.connect_timeout_s))
            self.reachable = True
            if (probe := getattr(self.transport, "connect_result", None)) is not None:
                self.writer.add(probe, key="connect")  # a kubectl exec probe: its argv is kept
            self._probe_banner()
        except PdforensicsError as exc:
            self.error = str(exc)
        except Exception as exc:  # paramiko can raise odd things on hostile peers
            self.error = f"{self.host.name}: connection failed: {type(exc).__name__}: {exc}"
        if self.error:
            self.writer.add(CommandResult(
                host=self.host.name, source="connect",
                argv=getattr(self.transport, "connect_argv", None) or _connect_argv(self.host),
                exit_status=None, stdout=b"", stderr="", duration_s=time.time() - t0,
                started_at=t0, error=self.error), key="connect")
            self._say("unreachable: " + self.error)
            return
        self.queue.add(self.planner.initial_jobs())
        workers = [threading.Thread(target=self._worker, daemon=True,
                                    name=f"{self.host.name}-ch{i}")
                   for i in range(max(1, self.options.channels))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.write_held()
        self._runner_note()
        left = len(self.queue.pending())
        self._say(f"done: {self.jobs_run} results" + (f", {left} not run" if left else ""))

    def _probe_banner(self) -> None:
        from pdforensics.transport.ssh import SshTransport

        if isinstance(self.transport, SshTransport):
            runner = self._runner()
            if runner is not None and runner.up(self.deadline.start_by()):
                # what the login shell printed before the runner; the transport cuts it from
                # any command that falls back to its own channel
                shown = runner.banner
            else:
                shown = self.banner = probe_banner(self.transport)
            if shown:
                self.planner.notes.append(banner_note(shown))
            self._runner_note()

    def _runner(self) -> SessionRunner | None:
        from pdforensics.transport.ssh import SshTransport

        return self.transport.runner if isinstance(self.transport, SshTransport) else None

    def runner_said(self) -> str | None:
        """The manifest's word on the host's session runner (None: not used on this host)."""
        runner = self._runner()
        return runner.describe() if runner is not None else None

    def _runner_note(self) -> None:
        """Say once why commands went one exec channel each (the runner refused or broke)."""
        runner = self._runner()
        if runner is not None and runner.refused and not self._runner_said:
            self._runner_said = True
            self.planner.notes.append(f"commands: {runner.refused}; each command ran in its own "
                                      "exec channel instead (one login shell each)")

    # -- running jobs ---------------------------------------------------------------------
    def _worker(self) -> None:
        assert self.transport is not None
        while True:
            job = self.queue.take(self.deadline, self.stop)
            if job is None:
                return
            timeout = self.deadline.job_timeout(job.source.timeout_s)
            if timeout < job.source.timeout_s:
                job = _with_timeout(self.host, job, timeout)
            result = self._fetch(job, timeout) if job.url else None
            read = None
            if job.read is not None and result is None:
                result, due = self.files.read(self.transport, job, timeout)
                read = job.read if result is not None else None
                if result is not None:
                    self._finish(job, result, read)
                if due:  # reads that need the command: one command for all (batch_reads)
                    for j, r in self._run_batch(due, timeout):
                        self._finish(j, r, None)
                if result is not None or not job.source.tail:
                    continue  # finished here, or by the batch of whoever ran it
            if result is None:
                result = self._execute(job, timeout)
            self._finish(job, result, read)

    def _execute(self, job: Job, timeout: float) -> CommandResult:
        """Run one job: an endpoint through the connection when it can, else its command."""
        assert self.transport is not None
        result = self._fetch(job, timeout) if job.url else None
        if result is None:
            result = strip_banner(self.transport.run(job.source.name, job.argv, timeout,
                                                     job.source.max_bytes), self.banner)
        return result

    def _record(self, job: Job, result: CommandResult, read: str | None = None) -> CommandResult:
        """Write a result's row and output; hand it to the background parser."""
        if result.exit_status in job.source.timeout_exits and not result.timed_out:
            result = _replace(result, timed_out=True)
        sent = {"sent": job.body.decode("utf-8", "replace")} if job.body is not None else {}
        try:
            entry = self.writer.add(result, key=job.key, url=job.url, extension=job.source.extension,
                                    redaction=job.source.redaction,
                                    target=target_json(job.target) | sent, read=read)
        except BundleClosed:  # it came back after the capture ended: its row says "still collecting"
            return result
        self.parser.submit(entry)
        return result

    def _release_held(self, ended: bool = False) -> list[tuple[Job, CommandResult, str | None]]:
        """The held results that may be written now: all once environ is done, each held back
        (no output) when environ never finished, or came back empty as the capture stopped."""
        with self._cond:
            if not self._held or (self.queue.environ_busy() and not ended):
                return []
            held, self._held = self._held, []
            unknown = ended or (self._environ_empty and self.stop.is_set())
        return [(j, held_back(r) if unknown else r, read) for j, r, read in held]

    def write_held(self) -> None:
        """Record what is still held, as held back: the host's run ended (or the capture gave up
        waiting on it) before its environ reads were done. Each held result is written once."""
        for job, result, read in self._release_held(ended=True):
            self._record(job, result, read)
            with self._cond:
                self.jobs_run += 1

    def _finish(self, job: Job, result: CommandResult, read: str | None, hold: bool = True) -> None:
        """Keep a job's result (or put it back for its one retry) and plan what follows."""
        if job.priority == STACKS:
            self.queue.dump_done(job)  # the dump is over: the host's other jobs may start
        if result.error == "connection lost":
            self.lost = True
        if self._retry(job, result):
            return
        if hold and job.priority > CHEAP:
            with self._cond:
                if self.queue.environ_busy():  # written once environ is read: still counts as running
                    self._held.append((job, result, read))
                    return
        result = self._record(job, result, read)
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
            self._environ_empty |= job.source.redaction == "environ" and not result.stdout
            self.queue.release(job, follow)
        self._tick(job)
        for held in self._release_held():
            self._finish(*held, hold=False)

    def _run_batch(self, due: list[Job], timeout: float) -> list[tuple[Job, CommandResult]]:
        """Run the command of file reads for them and every ready job of their source at once
        (see batch_reads); each job taken from the queue counts as running until finished."""
        assert self.transport is not None
        more = self.queue.take_ready(lambda j: j.source is due[0].source and j.read is not None)
        return self.files.run_batch(self.transport, [*due, *more], timeout, self.banner)

    # -- the capture's finally (request_log.restore_all) ----------------------------------
    def pending_keys(self) -> set[str]:
        return {j.key for j in self.queue.pending()}

    def take_pending(self, wanted: Callable[[Job], bool]) -> list[Job]:
        return self.queue.take_pending(wanted)

    def add_pending(self, jobs: list[Job]) -> None:
        self.queue.add(jobs)

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
        if (not job.source.retried or not result.timed_out or result.stdout
                or job.key in self._retried or not self.deadline.allows_retry(job.source.timeout_s)):
            return False
        self._retried.add(job.key)
        self.planner.notes.append(f"{job.key}: timed out after {result.duration_s:.1f} s with no output; "
                                  "retried once")
        self.queue.release(job, again=True)  # its slots go with it: the retry takes them anew
        return True

    def _tick(self, job: Job) -> None:
        """Tell a live progress display (one with a ``tick`` method) what this host is doing."""
        tick = getattr(self.progress, "tick", None)
        if tick is not None:
            with self._cond:
                pending = self.queue.pending()
                planned = self.jobs_run + self.queue.running + len(pending)
                phases = [j.priority for j in pending] + [job.priority]
            tick(self.host.name, job.source.name, min(phases), self.jobs_run, planned)

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(self.host.name, text)


def held_back(result: CommandResult) -> CommandResult:
    """A result whose output cannot be written: the host's environ reads (the secret values to
    redact it with) did not finish before the capture ended. Its row says so; no output."""
    return _replace(result, stdout=b"", stderr="", exit_status=None, truncated=False,
                    error="output not kept: this host's environ reads (the secret values to redact "
                          "it with) did not finish before the capture ended")


def _connect_argv(host: HostSpec) -> tuple[str, ...]:
    if host.slurm is not None and not host.slurm.via_ssh:
        from pdforensics.transport.slurm import SlurmTransport

        return SlurmTransport(host).srun_argv(("true",))
    return ("ssh", host.address)


def _with_timeout(host: HostSpec, job: Job, timeout: float) -> Job:
    from pdforensics.capture.planner import make_job

    return make_job(host, job.source, job.target, job.not_before, timeout_s=timeout)


def _replace(result: CommandResult, **changes: Any) -> CommandResult:
    return CommandResult(**{**result.__dict__, **changes})
