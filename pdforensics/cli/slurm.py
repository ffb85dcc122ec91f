"""The --slurm-* options of `capture` and `snapshot`, and turning them (or the cluster file's
slurm_job / slurm_container / slurm_ssh keys) into the job's hosts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from pdforensics.model import ClusterSpec

F = TypeVar("F", bound=Callable[..., Any])


def slurm_options(fn: F) -> F:
    """Add --slurm-job, --slurm-container and --slurm-ssh."""
    fn = click.option("--slurm-ssh", is_flag=True, default=None,
                      help="With --slurm-job: SSH to each node instead of srun into the job.")(fn)
    fn = click.option("--slurm-container", metavar="NAME",
                      help="With --slurm-job: the Pyxis container name the servers' steps use "
                           "(srun --container-name), so py-spy runs where the servers are.")(fn)
    return click.option("--slurm-job", metavar="JOBID",
                        help="Capture the servers of this running Slurm job: its nodes from "
                             "scontrol, every collector run with `srun --overlap` into it.")(fn)


def apply_slurm(cluster: ClusterSpec, job_id: str | None, container: str | None,
                via_ssh: bool | None, hosts: tuple[str, ...] = ()) -> ClusterSpec:
    """The cluster unchanged without a Slurm job; else one host per node of the job (a cluster
    file's [[hosts]] named after a node give that node's settings)."""
    from pdforensics.errors import ConfigError

    extra = cluster.extra
    job_id = job_id or _text(extra.get("slurm_job"))
    if not job_id:
        if container or via_ssh:
            raise ConfigError("--slurm-container and --slurm-ssh need --slurm-job (or slurm_job "
                              "in the cluster file)")
        return cluster
    if hosts:
        raise ConfigError("give either HOST arguments or --slurm-job, not both")
    from pdforensics.slurm.cluster import SlurmOptions, manifest_json, slurm_cluster
    from pdforensics.slurm.query import read_job

    options = SlurmOptions(job_id=job_id, container=container or _text(extra.get("slurm_container")),
                           via_ssh=bool(via_ssh if via_ssh is not None else extra.get("slurm_ssh", False)))
    job = read_job(job_id)
    base = cluster if any(not h.is_local for h in cluster.hosts) or extra.get("slurm_job") else None
    out = slurm_cluster(job, options, base)
    return ClusterSpec(name=out.name, hosts=out.hosts, store=out.store,
                       accept_new_host_keys=out.accept_new_host_keys,
                       extra={**out.extra, "slurm": manifest_json(job, options)})


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None
