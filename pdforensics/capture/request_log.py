"""`capture --request-log SECONDS`: SGLang request logging on for a bounded window, then back.

Per SGLang server a host's planner walks one switch through these states:

    reading (its /server_info gives the current setting) -> switching (POST
    /configure_logging on) -> on (the window) -> restoring -> restored | restore_failed

or ends early in ``not_on`` (the setting could not be read, the switch-on failed, no time
was left) or ``already_on`` (the server logs requests already: nothing is changed). The
server's log reads wait until its switch ends, so they cover the window.

SGLang has no endpoint that reads the run-time setting back: ``/server_info`` reports the
server args (``log_requests``, ``log_requests_level``), which /configure_logging does not
change. That is the value put back. The restore runs in the capture's ``finally``: after the
deadline, on Ctrl-C or SIGTERM and on errors too (``restore_all``); a restore that fails is
reported to the user and makes the capture exit 1.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

from pdforensics.capture.deadline import (
    REQUEST_LOG_RESERVE_S,
    REQUEST_LOG_SLACK_S,
    RESTORE_WAIT_S,
    Deadline,
    window_fits,
)
from pdforensics.catalog.cmdline import flag_value, has_flag
from pdforensics.collectors.base import Job, Source, Target
from pdforensics.collectors.http import GET_SERVER_INFO, SERVER_INFO
from pdforensics.collectors.logs import JOURNAL, LOG_FILE
from pdforensics.collectors.request_log import (
    LEVEL_ON,
    REQUEST_LOG_ON,
    REQUEST_LOG_RESTORE,
    body_json,
    sending,
)
from pdforensics.errors import ConfigError, ParseError
from pdforensics.model import CommandResult, HostSpec, ProcessInfo
from pdforensics.sglang.discovery import Service

#: what the window leaves of the deadline (capture/deadline.py owns it): the restore, the log reads
RESERVE_S = REQUEST_LOG_RESERVE_S
#: the longest window --request-log may ask for
MAX_WINDOW_S = 120.0
_HELD_SOURCES = (LOG_FILE.name, JOURNAL.name)
MakeJob = Callable[[HostSpec, Source, Target, float], Job]
_ENDED = ("restored", "restore_failed", "not_on", "already_on")


def check_window(seconds: float | None, deadline_s: float) -> None:
    """--request-log SECONDS is capped and must leave the restore and the log reads their time."""
    if seconds is None:
        return
    if seconds > MAX_WINDOW_S:
        raise ConfigError(f"--request-log {seconds:g}s is over the cap of {MAX_WINDOW_S:g}s")
    if not window_fits(seconds, deadline_s):
        raise ConfigError(f"--request-log {seconds:g}s does not fit in --deadline {deadline_s:g}s: "
                          f"the window, the restore and the log reads need SECONDS + "
                          f"{RESERVE_S + REQUEST_LOG_SLACK_S:g}s; "
                          "raise --deadline or shorten the window")


@dataclass(frozen=True)
class LoggingSetting:
    """What a server's request logger is set to (as /server_info reports it)."""

    log_requests: bool
    log_requests_level: int | None  # None: not known (then the capture leaves the level alone)
    read_from: str = "server_info"  # or "cmdline" (/server_info did not answer)


@dataclass
class _Switch:
    """One server's way through the states (guarded by the planner's lock)."""

    service: Service
    args: str | None = None  # the server's command line (the fallback for the setting)
    state: str = "reading"
    previous: LoggingSetting | None = None
    window_s: float | None = None
    job_key: str | None = None  # the switch-on or restore job in the queue or in flight
    on_at: float | None = None
    restored_at: float | None = None
    why: str | None = None  # why not on, or why the restore failed
    unconfirmed: str | None = None  # the switch-on got no answer (restored at once, a gap)
    held: list[Job] = field(default_factory=list)


class RequestLogPlan:
    """The --request-log part of one host's plan (called from HostPlanner under its lock)."""

    def __init__(self, host: HostSpec, seconds: float, make_job: MakeJob):
        self.host = host
        self._make_job = make_job  # planner.make_job (passed in: the planner imports this module)
        self.seconds = min(max(0.0, seconds), MAX_WINDOW_S)
        self.deadline: Deadline | None = None  # the capture's (set by HostRun)
        self._switches: dict[str, _Switch] = {}
        self._lock = threading.RLock()  # the planner's channels and the capture's finally

    @property
    def active(self) -> bool:
        return self.seconds > 0

    def discovered(self, services: Sequence[Service], processes: Sequence[ProcessInfo] = ()) -> None:
        """One switch per SGLang server (routers have no request logger)."""
        args = {p.pid: p.args for p in processes}
        with self._lock:
            for svc in services if self.active else ():
                if svc.kind == "server":
                    root = args.get(svc.root_pid) if svc.root_pid is not None else None
                    self._switches.setdefault(svc.label, _Switch(svc, root))

    def hold(self, jobs: list[Job]) -> list[Job]:
        """The jobs to queue now; a server's log reads wait while its switch is under way."""
        out = []
        with self._lock:
            for job in jobs:
                sw = self._switch_of(job)
                if job.source.name in _HELD_SOURCES and sw is not None and sw.state not in _ENDED:
                    sw.held.append(job)
                else:
                    out.append(job)
        return out

    def on_result(self, job: Job, result: CommandResult) -> list[Job]:
        """The next step of a switch after its /server_info, switch-on or restore ended."""
        with self._lock:
            return self._next(job, result)

    def _next(self, job: Job, result: CommandResult) -> list[Job]:
        sw = self._switch_of(job)
        name = job.source.name
        if sw is None:
            return []
        if job.source in (SERVER_INFO, GET_SERVER_INFO) and sw.state == "reading":
            status = _status(result)
            if job.source.fallback is not None and status == 404:
                return []  # the planner asks the old name next
            return self._read(sw, job, result, status)
        if name == REQUEST_LOG_ON.name and sw.state == "switching":
            status = _status(result)
            if status is not None and (status != 200 or not result.ok):  # refused: nothing changed
                return self._end(sw, "not_on", "the switch-on failed: " + _why(result))
            sw.state, sw.on_at = "on", result.started_at
            if status is None:  # no answer: it may have been applied, so it is put back at once
                sw.unconfirmed = "the switch-on was not confirmed: " + _why(result)
                sw.window_s = 0.0
            return [self._restore_job(sw, result)]
        if name == REQUEST_LOG_RESTORE.name and sw.state == "on":
            sw.restored_at = result.started_at
            if _status(result) == 200 and result.ok:
                return self._end(sw, "restored", None)
            return self._end(sw, "restore_failed", _why(result))
        return []

    def _read(self, sw: _Switch, job: Job, result: CommandResult, status: int | None) -> list[Job]:
        previous = _setting(result) if status == 200 and result.ok else None
        if previous is None:  # a wedged scheduler makes /server_info hang: the command line says
            previous = _from_cmdline(sw.args)
        if previous is None:
            said = _why(result) if status != 200 else "has no log_requests field"
            return self._end(sw, "not_on", f"the current setting is unknown: /{job.source.name} {said}")
        sw.previous = previous
        if previous.log_requests:
            return self._end(sw, "already_on", "the server logs requests already")
        left = self.deadline.window_left() if self.deadline is not None else self.seconds
        sw.window_s = round(min(self.seconds, left), 1)
        if sw.window_s < 1.0:
            return self._end(sw, "not_on", "no time left within --deadline for the window")
        sw.state = "switching"
        level = None if previous.log_requests_level is None else LEVEL_ON
        on = self._make_job(self.host, sending(REQUEST_LOG_ON, True, level), Target(service=sw.service), 0.0)
        sw.job_key = on.key
        return [on]

    def _restore_job(self, sw: _Switch, result: CommandResult) -> Job:
        assert sw.previous is not None and sw.window_s is not None
        src = sending(REQUEST_LOG_RESTORE, sw.previous.log_requests, sw.previous.log_requests_level)
        job = self._make_job(self.host, src, Target(service=sw.service),
                             result.started_at + result.duration_s + sw.window_s)
        sw.job_key = job.key
        return job

    def _end(self, sw: _Switch, state: str, why: str | None) -> list[Job]:
        sw.state, sw.why, sw.job_key = state, why, None
        held, sw.held = sw.held, []
        return held

    def _switch_of(self, job: Job) -> _Switch | None:
        svc = job.target.service
        return self._switches.get(svc.label) if svc is not None and self.active else None

    # -- the capture's finally ------------------------------------------------------------
    def in_flight(self, pending: set[str]) -> bool:
        """A switch-on or restore runs now (its job is no longer queued)."""
        with self._lock:
            return any(sw.state in ("switching", "on") and sw.job_key not in pending
                       for sw in self._switches.values())

    def is_restore(self, job: Job) -> bool:
        return job.source.name == REQUEST_LOG_RESTORE.name

    def unsent(self, pending: set[str]) -> list[Job]:
        """Switches whose switch-on never left the queue end as not on; their held log reads
        are returned (to be recorded as not run)."""
        out: list[Job] = []
        with self._lock:
            for sw in self._switches.values():
                if sw.state == "switching" and sw.job_key in pending:
                    out += self._end(sw, "not_on", "the capture ended before the switch-on")
        return out

    # -- what the manifest and the user are told ------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        out = []
        for sw in self._settled():
            prev = sw.previous
            out.append({
                "host": self.host.name, "service": sw.service.label, "state": sw.state,
                "window_s": sw.window_s, "on_at": sw.on_at, "restored_at": sw.restored_at,
                "previous": None if prev is None else {"log_requests": prev.log_requests,
                                                       "log_requests_level": prev.log_requests_level,
                                                       "read_from": prev.read_from},
                "why": sw.why or sw.unconfirmed})
        return out

    def left_on(self) -> list[str]:
        """One line per server whose request logging this capture turned on and left on."""
        out = []
        for sw in self._settled():
            if sw.state in ("on", "restore_failed"):
                prev = sw.previous or LoggingSetting(False, None)
                url = f"http://{sw.service.address}:{sw.service.port}/configure_logging"
                out.append(f"request logging left ON at {self.host.name} {sw.service.label} "
                           f"({'restore failed: ' + (sw.why or '?') if sw.why else 'not restored'}); "
                           f"put it back with: curl -X POST -H 'Content-Type: application/json' "
                           f"-d '{body_json(prev.log_requests, prev.log_requests_level)}' {url}")
        return out

    def gaps(self) -> list[str]:
        """Partial reasons: servers whose logging could not be turned on."""
        return [f"{self.host.name}: request logging not turned on at {sw.service.label} "
                f"({sw.why if sw.state == 'not_on' else sw.unconfirmed})"
                for sw in self._settled() if sw.state == "not_on" or sw.unconfirmed]

    def _settled(self) -> list[_Switch]:
        with self._lock:
            return list(self._switches.values())


def _status(result: CommandResult) -> int | None:
    from pdforensics.parsers.http import parse_http_response

    try:
        return parse_http_response(result.stdout).status if result.stdout else None
    except ParseError:
        return None


def _setting(result: CommandResult) -> LoggingSetting | None:
    """log_requests / log_requests_level from a /server_info answer."""
    from pdforensics.parsers.http import parse_http_response

    try:
        doc = parse_http_response(result.stdout).json()
    except ParseError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("log_requests"), bool):
        return None
    level = doc.get("log_requests_level")
    return LoggingSetting(doc["log_requests"], level if isinstance(level, int) else None)


def _from_cmdline(args: str | None) -> LoggingSetting | None:
    """The setting the server was started with, from its flags; None when a --config file may
    set it. Without --log-requests-level the level is version-dependent: left unknown."""
    if not args:
        return None
    argv = args.split()
    if has_flag(argv, "--config"):
        return None
    level = flag_value(argv, "--log-requests-level")
    return LoggingSetting(has_flag(argv, "--log-requests"),
                          int(level) if level is not None and level.isdigit() else None, "cmdline")


def _why(result: CommandResult) -> str:
    if result.timed_out:
        return "timed out"
    if result.error:
        return result.error
    status = _status(result)
    if status is not None:
        return f"HTTP {status}"
    lines = result.stderr.strip().splitlines()
    return lines[-1][:200] if lines else f"exit status {result.exit_status}"


class _Run(Protocol):
    """What restore_all needs of a capture.HostRun."""

    @property
    def planner(self) -> Any: ...
    def pending_keys(self) -> set[str]: ...
    def take_pending(self, wanted: Callable[[Job], bool]) -> list[Job]: ...
    def add_pending(self, jobs: list[Job]) -> None: ...
    def run_now(self, job: Job) -> None: ...


def restore_all(runs: Sequence[_Run]) -> int | None:
    """The capture's finally: every server still switched on is put back now, hosts in
    parallel, with Ctrl-C and SIGTERM held off meanwhile; returns a signal that arrived then."""
    live = [r for r in runs if r.planner.request_log.active]
    if not live:
        return None
    with _signals_held() as caught:
        threads = [threading.Thread(target=_restore_host, args=(r,), daemon=True,
                                    name="request-log-restore") for r in live]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=RESTORE_WAIT_S + 10)
    return caught[0] if caught else None


def _restore_host(run: _Run) -> None:
    plan: RequestLogPlan = run.planner.request_log
    end = time.monotonic() + RESTORE_WAIT_S
    while plan.in_flight(run.pending_keys()) and time.monotonic() < end:
        time.sleep(0.1)
    for job in run.take_pending(plan.is_restore):
        run.run_now(job)
    run.add_pending(plan.unsent(run.pending_keys()))


@contextmanager
def _signals_held() -> Iterator[list[int]]:
    """Ctrl-C, SIGTERM and SIGHUP are noted, not acted on, while the restores run."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, note) for s in sigs}
    try:
        yield caught
    finally:
        for s, h in old.items():
            signal.signal(s, h)
