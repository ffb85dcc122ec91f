"""A Slurm job -> the cluster a capture reaches: one host per node of the job, each run
through `srun --overlap` into the job (or SSH to the node when asked)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pdforensics.model import ClusterSpec, HostSpec, SlurmTarget
from pdforensics.slurm.job import SlurmJob
from pdforensics.slurm.logs import output_dir, worker_logs


@dataclass(frozen=True)
class SlurmOptions:
    """--slurm-job, --slurm-container, --slurm-ssh (or their cluster-file keys)."""

    job_id: str
    container: str | None = None  # Pyxis container name the servers' steps run in
    via_ssh: bool = False  # SSH to each node instead of srun


def _safe(node: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in node).lstrip(".") or "node"


def slurm_cluster(job: SlurmJob, options: SlurmOptions, base: ClusterSpec | None = None,
                  listing: dict[str, list[str]] | None = None) -> ClusterSpec:
    """One host per node of the job. A [[hosts]] entry of the cluster file named after a node
    gives that node's settings (py_spy, nvidia_smi, sudo, services, SSH details); the others
    get defaults. `listing` stands in for listing the output directory (tests)."""
    out_dir = output_dir(job)
    names = listing.get(out_dir or "") if listing is not None else None
    logs = worker_logs(out_dir, names)
    templates = {h.name: h for h in base.hosts} if base else {}
    hosts = []
    for node in job.nodes:
        name = _safe(node)
        template = templates.get(name) or templates.get(node) or HostSpec(name=name, address=node)
        target = SlurmTarget(job_id=job.job_id, node=node, container=options.container,
                             worker_logs=tuple(logs.get(node, [])), job_log=job.std_out or job.std_err,
                             via_ssh=options.via_ssh)
        address = node if template.address in ("local", name) else template.address
        hosts.append(dataclasses.replace(template, name=name, address=address, slurm=target))
    extra = dict(base.extra) if base else {}
    return ClusterSpec(name=base.name if base else f"slurm-{_safe(job.job_id)}", hosts=tuple(hosts),
                       store=base.store if base else None,
                       accept_new_host_keys=base.accept_new_host_keys if base else False,
                       extra=extra)


def manifest_json(job: SlurmJob, options: SlurmOptions) -> dict[str, Any]:
    """What the manifest keeps about the job (under "slurm")."""
    return {"job_id": job.job_id, "name": job.name, "state": job.state, "nodes": list(job.nodes),
            "batch_host": job.batch_host, "std_out": job.std_out, "std_err": job.std_err,
            "output_dir": output_dir(job), "container": options.container,
            "oci_container": job.container, "via": "ssh" if options.via_ssh else "srun",
            "steps": [{"id": s.step_id, "name": s.name, "state": s.state, "nodes": list(s.nodes)}
                      for s in job.steps]}
