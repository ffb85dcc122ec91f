"""Ask Slurm about a job from where pdforensics runs (a login node): `scontrol show job -d`
and `scontrol show step`, each bounded by a timeout. Read-only."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Sequence

from pdforensics.errors import ParseError, PdforensicsError
from pdforensics.slurm.job import SlurmJob, parse_job, parse_steps

SCONTROL_TIMEOUT_S = 15.0


def _scontrol(args: Sequence[str], timeout_s: float) -> str:
    argv = ["scontrol", *args]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise PdforensicsError("scontrol not found: run pdforensics where Slurm's client "
                               "commands are installed (a login node)") from None
    except subprocess.TimeoutExpired:
        raise PdforensicsError(f"`{' '.join(argv)}` did not answer within {timeout_s:g} s "
                               "(is slurmctld reachable?)") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PdforensicsError(f"`{' '.join(argv)}` failed: " + (said[-1] if said else
                                                               f"exit status {done.returncode}"))
    return done.stdout.decode("utf-8", "replace")


def read_job(job_id: str, timeout_s: float = SCONTROL_TIMEOUT_S) -> SlurmJob:
    """The job with its steps; PdforensicsError when Slurm does not know it or it is not
    running (nothing on its nodes to capture)."""
    job_id = job_id.strip()
    if not job_id or not all(c.isalnum() or c in "_" for c in job_id):
        raise PdforensicsError(f"slurm job id {job_id!r}: expected a number such as 1234 "
                               "(or 1234_7 for an array task)")
    try:
        job = parse_job(_scontrol(["show", "job", "-d", job_id], timeout_s), job_id)
    except ParseError as exc:
        raise PdforensicsError(f"slurm job {job_id}: {exc}") from None
    if job.state not in ("RUNNING", "SUSPENDED", "COMPLETING"):
        why = f" ({job.reason})" if job.reason else ""
        raise PdforensicsError(f"slurm job {job_id} is {job.state}{why}: no running servers "
                               "to capture")
    if not job.nodes:
        raise PdforensicsError(f"slurm job {job_id} has no nodes allocated")
    try:
        steps = parse_steps(_scontrol(["show", "step", job.job_id], timeout_s))
    except (ParseError, PdforensicsError):
        steps = ()  # the nodes are enough; steps only name the workers
    return dataclasses.replace(job, steps=steps)
