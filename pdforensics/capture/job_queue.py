"""One host's jobs: those waiting and those running, and the rules for which may start next.

A job is taken (``take``, or ``take_ready`` for a batch) and later released (``release``),
once: the slots a running job holds (a channel; a slow channel; an environ read; a py-spy
dump's quiet time) are read off the running jobs themselves, never counted up and down, so a
job put back for a retry (``release(job, again=True)``) cannot keep a slot it no longer uses.
No transport here: the queue is driven by HostRun's channels (capture/host_run.py) and tested
on its own (tests/capture/test_job_queue.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from pdforensics.capture.deadline import Deadline
from pdforensics.collectors.base import CHEAP, SLOW, STACKS, Job

# Channels kept free of slow, hang-prone calls so the cheap evidence never queues behind them.
RESERVED_FOR_CHEAP = 2
# While a py-spy dump has its process stopped (a few ms), the host starts no other command, not
# even another dump, so the dump does not wait for a core behind our own work or another py-spy;
# a dump still running after this long (a thread in D state) no longer holds the host back.
DUMP_QUIET_S = 0.3
# How long a waiting channel sleeps at most before it looks at the queue again.
POLL_S = 0.5


class JobQueue:
    """The jobs of one host. Thread-safe: every channel takes from and releases to it."""

    def __init__(self, channels: int, discovered: Callable[[], bool] = lambda: True):
        self.channels = max(1, channels)
        self._discovered = discovered  # slow, hang-prone calls wait for discovery
        self._pending: list[Job] = []
        self._running: dict[str, Job] = {}  # key -> the job taken (a held result still runs)
        self._dumping: dict[str, float] = {}  # job key -> when its py-spy dump started
        self.cond = threading.Condition()

    # -- what is there --------------------------------------------------------------------
    def add(self, jobs: Iterable[Job]) -> None:
        with self.cond:
            self._pending.extend(jobs)
            self.cond.notify_all()

    def pending(self) -> list[Job]:
        with self.cond:
            return list(self._pending)

    @property
    def running(self) -> int:
        with self.cond:
            return len(self._running)

    @property
    def slow_running(self) -> int:
        with self.cond:
            return sum(j.priority >= SLOW for j in self._running.values())

    def environ_busy(self) -> bool:
        """Environ reads running or waiting: secrets learned from them must be known before
        the host's logs, stacks and endpoint bodies are written."""
        with self.cond:
            return any(j.source.redaction == "environ" for j in (*self._running.values(), *self._pending))

    # -- take and release -----------------------------------------------------------------
    def take(self, deadline: Deadline, stop: threading.Event) -> Job | None:
        """Block until a job may start and take it; None when the host is finished (nothing
        waits or runs), the capture was stopped, or no job may start before the deadline."""
        with self.cond:
            while True:
                if stop.is_set() or deadline.closed() or (not self._pending and not self._running):
                    self.cond.notify_all()
                    return None
                job = self.pick(time.time())
                if job is not None:
                    self._take(job)
                    return job
                self.cond.wait(timeout=self._wait_s())

    def take_ready(self, wanted: Callable[[Job], bool]) -> list[Job]:
        """Take every job that may start now and that ``wanted`` accepts (the other file reads
        of a batch): each counts as running until released."""
        with self.cond:
            now = time.time()
            jobs = [j for j in self._pending if j.not_before <= now and wanted(j)]
            for job in jobs:
                self._take(job)
            return jobs

    def take_pending(self, wanted: Callable[[Job], bool]) -> list[Job]:
        """Take jobs out of the queue without running them (the capture's finally)."""
        with self.cond:
            taken = [j for j in self._pending if wanted(j)]
            self._pending = [j for j in self._pending if not wanted(j)]
            return taken

    def _take(self, job: Job) -> None:
        self._pending.remove(job)
        self._running[job.key] = job
        if job.priority == STACKS:
            self._dumping[job.key] = time.monotonic()

    def dump_done(self, job: Job) -> None:
        """The job's py-spy dump is over: the host's other jobs may start."""
        with self.cond:
            if self._dumping.pop(job.key, None) is not None:
                self.cond.notify_all()

    def release(self, job: Job, follow: Iterable[Job] = (), again: bool = False) -> None:
        """The job is finished (``again``: the job as taken goes back for one more run); queue
        what follows. ``job`` may be the copy that ran (its timeout cut): jobs are known by key."""
        with self.cond:
            taken = self._running.pop(job.key)
            self._dumping.pop(job.key, None)
            self._pending.extend([taken] if again else [])
            self._pending.extend(follow)
            self.cond.notify_all()

    # -- which job next -------------------------------------------------------------------
    def pick(self, now: float) -> Job | None:
        """The job that may start now, or None (call with ``cond`` held)."""
        if time.monotonic() < self._quiet_until():
            return None  # not even another dump: one process stopped at a time, py-spy on a core
        ready = [j for j in self._pending if j.not_before <= now]
        running = self._running.values()
        slow_room = sum(j.priority >= SLOW for j in running) < max(1, self.channels - RESERVED_FOR_CHEAP)
        if not self._discovered() or not slow_room:
            # slow, hang-prone calls wait for discovery, and never fill every channel
            ready = [j for j in ready if j.priority < SLOW]
        if any(j.source.redaction == "environ" for j in (*running, *self._pending)):
            # secrets learned from this host's environ must be known before its logs, stacks and
            # endpoint bodies are written: nothing unredacted reaches disk, even under SIGKILL.
            # A first py-spy dump may run meanwhile (it sets when the capture can end): its
            # output waits in memory until the environ reads are done (HostRun._finish)
            ready = [j for j in ready if j.priority <= CHEAP or first_dump(j)]
        return min(ready, key=order) if ready else None

    def _quiet_until(self) -> float:
        """Until when a py-spy dump under way keeps the host's other commands from starting."""
        return max(self._dumping.values(), default=0.0) + DUMP_QUIET_S

    def _wait_s(self) -> float:
        now = time.time()
        waits = [j.not_before - now for j in self._pending if j.not_before > now]
        quiet = self._quiet_until() - time.monotonic()
        return min([POLL_S, *waits, *([quiet] if quiet > 0 else [])])


def order(job: Job) -> tuple[int, int, float]:
    """Which ready job goes first: by priority, except that a process's first py-spy dump goes
    right after discovery, ahead of the cheap reads: the last dump cannot start before
    STUCK_SPAN_S after it, so it sets when the capture can end. It is as hang-prone as the other
    slow calls, so it still counts against their channels (RESERVED_FOR_CHEAP stay free)."""
    if first_dump(job):
        return CHEAP, 0, job.not_before
    return job.priority, 1, job.not_before


def first_dump(job: Job) -> bool:
    """A process's first py-spy dump (the one that sets when the capture can end)."""
    return job.priority == STACKS and job.target.sample == 1
