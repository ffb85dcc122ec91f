"""Where a capture goes: HOST arguments, --local, a cluster file, a Slurm job or Kubernetes
pods, turned into the cluster the capture runs over (and, for pods, its sidecar and manifest
section). `capture`, `snapshot`, `watch` and `doctor` all resolve their targets here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pdforensics.errors import ConfigError
from pdforensics.model import ClusterSpec

if TYPE_CHECKING:
    from pdforensics.capture.run import Sidecar
    from pdforensics.k8s.setup import K8sCapture


@dataclass(frozen=True)
class Where:
    """The targets a command line names. ``cluster_file`` is -c as given; ``configured_file``
    is where the cluster file comes from when no HOST argument or --local says otherwise
    (-c, else $PDFORENSICS_CLUSTER, else /etc/pdforensics/cluster.toml when it exists)."""

    hosts: tuple[str, ...] = ()
    cluster_file: str | None = None
    configured_file: str | None = None
    local: bool = False
    identity: str | None = None
    known_hosts: str | None = None
    sudo: bool = False
    accept_new_host_keys: bool = False
    # a Slurm job (--slurm-*, or the cluster file's slurm_job / slurm_container / slurm_ssh)
    slurm_job: str | None = None
    slurm_container: str | None = None
    slurm_ssh: bool | None = None
    # Kubernetes pods (--k8s and its options, or the cluster file's [k8s] table)
    use_k8s: bool = False
    namespace: str | None = None
    selector: str | None = None
    context: str | None = None
    k8s_debug: bool = False
    k8s_debug_image: str | None = None

    @property
    def from_file(self) -> bool:
        """The hosts come from a cluster file (not HOST arguments, --local or no file at all)."""
        return not self.hosts and not self.local and self.configured_file is not None


@dataclass(frozen=True)
class Targets:
    """The resolved cluster, and what capturing pods adds to the capture."""

    cluster: ClusterSpec
    accept_new_host_keys: bool = False  # --accept-new-host-keys or the cluster file's key
    k8s: K8sCapture | None = None

    @property
    def sidecars(self) -> tuple[Sidecar, ...]:
        return (self.k8s.sidecar,) if self.k8s is not None else ()

    @property
    def extra_manifest(self) -> dict[str, Any] | None:
        return {"k8s": self.k8s.manifest} if self.k8s is not None else None


def resolve(where: Where, deadline_s: float, pods: bool = True) -> Targets:
    """The cluster a command runs over: the hosts, then a Slurm job's nodes, then pods (only
    where ``pods``: a command that cannot capture them yet ignores a [k8s] table)."""
    cluster = apply_slurm(resolve_cluster(where), where.slurm_job, where.slurm_container,
                          where.slurm_ssh, where.hosts)
    k8s = None
    if pods:
        from pdforensics.k8s.options import k8s_capture

        k8s = k8s_capture(cluster, where.from_file, where.use_k8s, where.namespace, where.selector,
                          where.context, where.k8s_debug, where.k8s_debug_image, deadline_s)
    if k8s is not None:
        cluster = k8s.cluster
    return Targets(cluster, where.accept_new_host_keys or cluster.accept_new_host_keys, k8s)


def resolve_cluster(where: Where) -> ClusterSpec:
    """HOST args, --local, else the configured cluster file, else this machine. A configured
    file that cannot be read is an error: never a silent capture of the local machine instead."""
    from pdforensics.config.cluster import hosts_from_args, load_cluster_file, local_cluster

    if where.cluster_file and (where.hosts or where.local):
        raise ConfigError("give either -c FILE, HOST arguments or --local, not several")
    if where.hosts:
        from pdforensics.config.check import check_host_files

        check_host_files(where.identity, where.known_hosts, "--identity/--known-hosts")
        return hosts_from_args(where.hosts, where.identity, where.known_hosts, where.sudo)
    if where.local:
        return local_cluster()
    configured = where.configured_file
    return load_cluster_file(configured) if configured else local_cluster()


def apply_slurm(cluster: ClusterSpec, job_id: str | None, container: str | None,
                via_ssh: bool | None, hosts: tuple[str, ...] = ()) -> ClusterSpec:
    """The cluster unchanged without a Slurm job; else one host per node of the job (a cluster
    file's [[hosts]] named after a node give that node's settings)."""
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
