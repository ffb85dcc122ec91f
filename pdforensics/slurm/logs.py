"""The log files of a Slurm job: the per-worker files `{node}_{role}_w{index}.{log,err,out}`
that NVIDIA's recipes write into the job's output directory, and the job's StdOut/StdErr.
Attached to discovered services that have no log file of their own."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from pdforensics import linear
from pdforensics.model import HostSpec, SlurmTarget
from pdforensics.sglang.discovery import Discovery
from pdforensics.slurm.job import SlurmJob

_WORKER = linear.compile(r"^(?P<node>.+)_(?P<role>prefill|decode|router|agg|frontend)_w(?P<index>\d+)"
                     r"\.(?P<ext>log|err|out)$")
#: SGLang logs to stderr: prefer the file that holds it
_EXT_RANK = {"err": 0, "log": 1, "out": 2}
_ROLE = {"agg": "unified", "frontend": "router"}
MAX_LISTED = 10_000


def output_dir(job: SlurmJob) -> str | None:
    """The directory of the job's StdOut (else StdErr): where recipes put worker logs."""
    path = job.std_out or job.std_err
    return os.path.dirname(path) if path and os.path.isabs(path) else None


def worker_logs(directory: str | None, names: Iterable[str] | None = None
                ) -> dict[str, list[tuple[str, str]]]:
    """node -> [(role, path)] ordered by worker index, one file per worker (.err before .log
    before .out). `names` lists the directory when given (tests, or a listing from elsewhere)."""
    if directory is None:
        return {}
    if names is None:
        try:
            names = sorted(os.listdir(directory))[:MAX_LISTED]
        except OSError:
            return {}
    best: dict[tuple[str, str, int], tuple[int, str]] = {}
    for name in names:
        m = _WORKER.match(name)
        if m is None:
            continue
        role = _ROLE.get(m["role"], m["role"])
        key = (m["node"], role, int(m["index"]))
        rank = _EXT_RANK[m["ext"]]
        if key not in best or rank < best[key][0]:
            best[key] = (rank, os.path.join(directory, name))
    out: dict[str, list[tuple[str, str]]] = {}
    for (node, role, _index), (_rank, path) in sorted(best.items()):
        out.setdefault(node, []).append((role, path))
    return out


def attach_logs(host: HostSpec, discovery: Discovery) -> tuple[Discovery, list[str]]:
    """Give each discovered service on a Slurm node without a log file its worker's log (the
    n-th worker log of its role, services ordered by port), else the job's StdOut. Returns the
    discovery and notes saying which file was taken for whom."""
    target: SlurmTarget | None = host.slurm
    if target is None:
        return discovery, []
    notes: list[str] = []
    by_role: dict[str, list[str]] = {}
    for role, log_path in target.worker_logs:
        by_role.setdefault(role, []).append(log_path)
    replaced = list(discovery.services)
    seen: dict[str, int] = {}
    for i in sorted(range(len(replaced)), key=lambda k: (replaced[k].role, replaced[k].port)):
        svc = replaced[i]
        if svc.log_file:
            continue
        n = seen.get(svc.role, 0)
        seen[svc.role] = n + 1
        candidates = by_role.get(svc.role, [])
        path = candidates[n] if n < len(candidates) else target.job_log
        if path:
            kind = "worker log" if n < len(candidates) else "the job's output file"
            notes.append(f"{svc.label}: log from {kind} {path}")
            replaced[i] = dataclasses.replace(svc, log_file=path)
    return dataclasses.replace(discovery, services=tuple(replaced)), notes
