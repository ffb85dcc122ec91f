"""Transports run one single-statement command on a host and return a CommandResult."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdforensics.transport.base import Transport, remote_argv
from pdforensics.transport.local import LocalTransport

if TYPE_CHECKING:
    from pdforensics.transport.ssh import SshTransport

__all__ = ["LocalTransport", "SshTransport", "Transport", "remote_argv", "open_transport"]


def __getattr__(name: str) -> Any:
    """SshTransport, imported when asked for: paramiko costs a tenth of a second and more to
    import, and reading loose files (triage) never opens a connection."""
    if name == "SshTransport":
        from pdforensics.transport.ssh import SshTransport

        return SshTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_transport(host: object, accept_new_host_keys: bool = False) -> Transport:
    """The transport for a host: srun into a Slurm job, local subprocesses, `kubectl exec` into
    a pod, or one SSH connection."""
    from pdforensics.model import HostSpec

    assert isinstance(host, HostSpec)
    if host.slurm is not None and not host.slurm.via_ssh:
        from pdforensics.transport.slurm import SlurmTransport

        return SlurmTransport(host)
    if host.is_local:
        return LocalTransport(host)
    if host.address.startswith("k8s://"):
        from pdforensics.transport.kubectl import KubectlTransport

        return KubectlTransport(host)
    from pdforensics.transport.ssh import SshTransport

    return SshTransport(host, accept_new_host_keys=accept_new_host_keys, runner=host.runner)
