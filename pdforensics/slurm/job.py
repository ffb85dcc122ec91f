"""Parse `scontrol show job -d` and `scontrol show step` text into frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.slurm.hostlist import expand_hostlist

#: keys scontrol prints alone on their line, whose values may hold spaces
_WHOLE_LINE = frozenset({"Command", "WorkDir", "StdErr", "StdIn", "StdOut", "Comment",
                         "AdminComment", "SystemComment", "Reason", "Container", "ContainerID"})
_KEY = linear.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_/:]*)=")
_NULL = ("", "(null)", "N/A", "None")


@dataclass(frozen=True)
class SlurmStep:
    """One step of a job (`scontrol show step`)."""

    step_id: str  # "1234.0", "1234.batch"
    name: str
    state: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class SlurmJob:
    """What a capture needs of a job: its state, nodes, output files and steps."""

    job_id: str
    name: str
    state: str
    reason: str | None
    user: str | None
    nodes: tuple[str, ...]
    batch_host: str | None
    std_out: str | None
    std_err: str | None
    work_dir: str | None
    container: str | None  # an OCI container of the job (`--container`), when scontrol shows one
    steps: tuple[SlurmStep, ...] = ()


def _fields(record: list[str]) -> dict[str, str]:
    """key -> value over a record's lines (the first value of a key wins: per-node `Nodes=`
    detail lines come after `NodeList=` and are kept apart by the caller)."""
    out: dict[str, str] = {}
    for line in record:
        stripped = line.strip()
        head = stripped.split("=", 1)[0]
        if head in _WHOLE_LINE and "=" in stripped:
            out.setdefault(head, stripped.split("=", 1)[1])
            continue
        matches = list(_KEY.finditer(stripped))
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(stripped)
            out.setdefault(m.group(1), stripped[m.end():end].strip())
    return out


def _records(text: str, first_key: str) -> list[list[str]]:
    """Split scontrol text into records, each starting at a line `first_key=...`."""
    records: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(first_key + "="):
            records.append([line])
        elif records:
            if line.strip():
                records[-1].append(line)
        elif line.strip():
            raise ParseError(f"expected a record starting with {first_key}=", line=line,
                             lineno=lineno)
    return records


def _opt(fields: dict[str, str], key: str) -> str | None:
    value = fields.get(key, "")
    return None if value in _NULL else value


def _nodes(fields: dict[str, str], where: str) -> tuple[str, ...]:
    try:
        return expand_hostlist(fields.get("NodeList", ""))
    except ParseError as exc:
        raise ParseError(f"{where}: bad NodeList: {exc}") from None


def parse_jobs(text: str) -> tuple[SlurmJob, ...]:
    """Every job record of `scontrol show job [-d]` output; () for empty text."""
    jobs = []
    for record in _records(text, "JobId"):
        f = _fields(record)
        job_id = f.get("JobId", "").split()[0] if f.get("JobId") else ""
        if not job_id:
            raise ParseError("job record without a JobId", line=record[0])
        user = _opt(f, "UserId")
        jobs.append(SlurmJob(
            job_id=job_id, name=f.get("JobName", ""), state=f.get("JobState", "UNKNOWN"),
            reason=_opt(f, "Reason"), user=user.split("(")[0] if user else None,
            nodes=_nodes(f, f"job {job_id}"), batch_host=_opt(f, "BatchHost"),
            std_out=_opt(f, "StdOut"), std_err=_opt(f, "StdErr"), work_dir=_opt(f, "WorkDir"),
            container=_opt(f, "Container")))
    return tuple(jobs)


def parse_job(text: str, job_id: str) -> SlurmJob:
    """The record of one job; ParseError when the text has none for it."""
    for job in parse_jobs(text):
        if job.job_id == job_id:
            return job
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    raise ParseError(f"no record of job {job_id} in scontrol's output", line=first or "(empty)")


def parse_steps(text: str) -> tuple[SlurmStep, ...]:
    """Every step record of `scontrol show step` output; () for empty text (or no steps)."""
    if text.strip().startswith("No job steps"):
        return ()
    steps = []
    for record in _records(text, "StepId"):
        f = _fields(record)
        step_id = f.get("StepId", "").split()[0] if f.get("StepId") else ""
        if not step_id:
            raise ParseError("step record without a StepId", line=record[0])
        steps.append(SlurmStep(step_id=step_id, name=f.get("Name", ""),
                               state=f.get("State", "UNKNOWN"), nodes=_nodes(f, f"step {step_id}")))
    return tuple(steps)
