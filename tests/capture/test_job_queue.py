"""A host's job queue on its own, without a transport: one take/release pair, so a job put
back for a retry gives back every slot it held (the old `_retry` kept a slow channel)."""

from __future__ import annotations

import dataclasses
import threading
import time

from pdforensics.capture.deadline import Deadline
from pdforensics.capture.job_queue import DUMP_QUIET_S, JobQueue
from pdforensics.capture.planner import make_job
from pdforensics.collectors import proc, pyspy, versions
from pdforensics.collectors.base import Job, Target
from pdforensics.model import HostSpec, ProcessInfo

HOST = HostSpec(name="h", address="local")
STOP = threading.Event()


def _proc(pid: int) -> ProcessInfo:
    return ProcessInfo(pid=pid, ppid=1, state="S", start_epoch=0.0, threads=1, rss_kb=1, kind="server",
                       args="/usr/bin/python3 -m sglang.launch_server")


def slow(pid: int) -> Job:  # pip_freeze: a SLOW source
    return make_job(HOST, versions.PIP_FREEZE, Target(process=_proc(pid)))


def cheap(pid: int) -> Job:
    return make_job(HOST, proc.CMDLINE, Target(process=_proc(pid)))


def take(q: JobQueue) -> Job | None:
    """What may start now: a deadline that closes in half a second stands for 'do not wait'."""
    return q.take(Deadline.after(1.5), STOP)


def test_a_retried_slow_job_gives_back_its_slot() -> None:
    """The test that would have caught the `_retry` leak: a slow job that times out and goes
    back in the queue must not keep its slow channel, or after a few retries no slow job runs."""
    q = JobQueue(channels=3)  # one slow channel (2 stay for the cheap reads)
    q.add([slow(1)])
    for _ in range(5):
        job = take(q)
        assert job is not None and job.key == slow(1).key, "the slow slot leaked on the retry"
        assert q.slow_running == 1
        q.release(job, again=True)
        assert q.slow_running == 0 and q.running == 0
    assert [j.key for j in q.pending()] == [slow(1).key]


def test_the_retry_puts_back_the_job_as_taken_not_the_copy_that_ran() -> None:
    q = JobQueue(channels=6)
    q.add([cheap(1)])
    job = take(q)
    assert job is not None
    ran = dataclasses.replace(job, argv=("timeout", "-k", "2", "1", "cat"))  # its timeout cut
    q.release(ran, again=True)
    assert q.pending() == [job] and q.running == 0


def test_slow_jobs_never_fill_every_channel() -> None:
    q = JobQueue(channels=4)  # 2 slow channels
    q.add([slow(1), slow(2), slow(3), cheap(4)])
    taken = [take(q), take(q), take(q)]
    assert [j.key for j in taken if j is not None] == [cheap(4).key, slow(1).key, slow(2).key]
    assert q.slow_running == 2 and take(q) is None  # the third slow job waits for a slow channel
    q.release(taken[1])  # type: ignore[arg-type]
    after = take(q)
    assert after is not None and after.key == slow(3).key


def test_slow_jobs_wait_for_discovery() -> None:
    found = threading.Event()
    q = JobQueue(channels=6, discovered=found.is_set)
    q.add([slow(1), cheap(2)])
    job = take(q)
    assert job is not None and job.key == cheap(2).key and take(q) is None
    found.set()
    job = take(q)
    assert job is not None and job.key == slow(1).key


def test_while_environ_is_read_only_cheap_jobs_and_first_dumps_start() -> None:
    q = JobQueue(channels=6)
    environ = make_job(HOST, proc.ENVIRON, Target(process=_proc(1)))
    dump = make_job(HOST, pyspy.PYSPY_DUMP, Target(process=_proc(1), sample=1))
    later_dump = make_job(HOST, pyspy.PYSPY_DUMP, Target(process=_proc(2), sample=2))
    q.add([environ, slow(3), later_dump, dump])
    taken = [take(q), take(q)]
    assert {j.key for j in taken if j is not None} == {environ.key, dump.key}
    assert q.environ_busy()
    q.dump_done(dump)
    assert take(q) is None  # the slow read and the second dump wait for environ
    q.release(environ)
    q.release(dump)
    assert {j.key for j in (take(q), take(q)) if j is not None} == {slow(3).key, later_dump.key}


def test_a_running_dump_keeps_the_host_quiet_until_it_is_done_or_stale() -> None:
    q = JobQueue(channels=6)
    dump = make_job(HOST, pyspy.PYSPY_DUMP, Target(process=_proc(1), sample=1))
    q.add([dump, cheap(2)])
    assert take(q) == dump
    with q.cond:
        assert q.pick(time.time()) is None  # one process stopped at a time: nothing else starts
    time.sleep(DUMP_QUIET_S + 0.05)
    job = take(q)  # a dump still running after DUMP_QUIET_S no longer holds the host back
    assert job is not None and job.key == cheap(2).key


def test_take_ends_when_nothing_waits_or_runs_or_the_deadline_closes() -> None:
    q = JobQueue(channels=2)
    assert q.take(Deadline.after(60), STOP) is None  # nothing at all: finished
    q.add([cheap(1)])
    assert q.take(Deadline.after(0.5), STOP) is None  # closing: no job starts in the last second
    stopped = threading.Event()
    stopped.set()
    assert q.take(Deadline.after(60), stopped) is None
    job = take(q)
    assert job is not None


def test_take_ready_counts_each_batched_job_as_running() -> None:
    q = JobQueue(channels=3)
    q.add([cheap(1), cheap(2), slow(3)])
    batch = q.take_ready(lambda j: j.source is proc.CMDLINE)
    assert [j.key for j in batch] == [cheap(1).key, cheap(2).key] and q.running == 2
    for job in batch:
        q.release(job)
    assert q.running == 0


def test_the_deadline_owns_the_margins() -> None:
    """A job's timeout is its source's own, cut to end JOB_MARGIN_S before the end, never under
    one second; a retry needs its timeout and RETRY_MARGIN_S; nothing starts in the last second."""
    from pdforensics.capture.deadline import JOB_MARGIN_S, RETRY_MARGIN_S

    assert Deadline.after(60).job_timeout(20.0) == 20.0
    assert 10 - JOB_MARGIN_S - 0.1 < Deadline.after(10).job_timeout(20.0) <= 10 - JOB_MARGIN_S
    assert Deadline.after(2).job_timeout(20.0) == 1.0
    assert Deadline.after(5.0 + RETRY_MARGIN_S + 0.5).allows_retry(5.0)
    assert not Deadline.after(5.0 + RETRY_MARGIN_S - 0.5).allows_retry(5.0)
    assert Deadline.after(0.9).closed() and not Deadline.after(1.5).closed()
