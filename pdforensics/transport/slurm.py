"""Slurm transport: every command runs inside the job's allocation on one node as
`srun --overlap --jobid J -w NODE -N1 -n1 [--container-name C] -- timeout -k 2 S cmd`.
No agent, no SSH: the engine the operators already run. Same contract as the SSH transport."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pdforensics import linear
from pdforensics.errors import TransportError
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.base import remote_argv
from pdforensics.transport.local import LocalTransport, ThroughLocalClient

#: what srun itself may take (step creation through slurmctld, I/O set-up) beyond the
#: command's own timeout, before the local side gives up on it
SRUN_SLACK_S = 3.0
#: srun's own errors (job gone or expired, node down or not in the job, step limit, container
#: not found) are every `srun: error:` line except the report of a task's own exit
_SRUN_ERROR = linear.compile(r"^srun: error: ")
_TASK_EXIT = linear.compile(r"\S+: tasks? [\d,-]+: ")  # a task's own exit status: not srun's error
_WAITING = linear.compile(r"srun: (Job \S+ step creation temporarily disabled|Job \S+ step creation still "
                      r"disabled|Step created for .*|.*retrying)")


class SlurmTransport(ThroughLocalClient):
    """Runs each command as its own overlapping job step on the host's node."""


    def __init__(self, host: HostSpec):
        assert host.slurm is not None
        self.host = host
        self.target = host.slurm
        self._local = LocalTransport(host)

    def srun_argv(self, argv: Sequence[str]) -> tuple[str, ...]:
        """The srun command line that runs argv (already wrapped by remote_argv) on the node."""
        t = self.target
        head = ["srun", "--overlap", f"--jobid={t.job_id}", "-w", t.node, "-N1", "-n1",
                "--quiet", "--input=none", "--job-name=pdforensics"]
        if t.container:
            head.append(f"--container-name={t.container}")
        return (*head, "--", *argv)

    def connect(self, timeout_s: float) -> None:
        """Start one trivial step on the node: a job that ended, a node that is down or a step
        limit shows here, as the host's reason, before any collector runs."""
        result = self.run("connect", remote_argv(("true",), max(1.0, timeout_s - SRUN_SLACK_S - 3.5)),
                          max(1.0, timeout_s - SRUN_SLACK_S - 3.5), 4096)
        if not result.ok:
            why = result.error or _last_line(result.stderr) or f"exit status {result.exit_status}"
            raise TransportError(f"{self.host.name}: srun into job {self.target.job_id} on "
                                 f"{self.target.node} failed: {why}")

    def run(self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int
            ) -> CommandResult:
        result = self._local.run(source, self.srun_argv(argv), timeout_s + SRUN_SLACK_S, max_bytes)
        return _classify(result)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _classify(result: CommandResult) -> CommandResult:
    """A step srun could not start is an error with srun's reason, not the command's output."""
    if result.ok or result.stdout:
        return result
    start = next((ln for ln in result.stderr.splitlines()
                  if _SRUN_ERROR.match(ln) and not _TASK_EXIT.match(ln[13:])), None)
    if start is None and result.timed_out and _WAITING.search(result.stderr):
        start = next(ln for ln in result.stderr.splitlines() if _WAITING.search(ln))
        start += " (no step started before the timeout)"
    if start is None:
        return result
    return CommandResult(**{**result.__dict__, "error": f"srun could not start: {start.strip()[:300]}",
                            "duration_s": result.duration_s or 0.0,
                            "started_at": result.started_at or time.time()})
