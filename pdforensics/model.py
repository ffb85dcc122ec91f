"""Frozen dataclasses that cross layer boundaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["router", "prefill", "decode", "unified"]
Scope = Literal["host", "process", "unit", "endpoint"]
#: how a source's output is redacted before it reaches disk (redact/redactor.py): free text
#: through the detectors, an environ block or an argv by allowlist, a log tail from its first
#: whole line, a pickled dump as its redacted JSON form
Redaction = Literal["text", "environ", "argv", "log_tail", "pickle"]


@dataclass(frozen=True)
class CommandResult:
    """What one command (or HTTP fetch) produced. A failure is data, never an exception."""

    host: str
    source: str
    argv: tuple[str, ...]
    exit_status: int | None
    stdout: bytes
    stderr: str
    duration_s: float
    started_at: float
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_status == 0


@dataclass(frozen=True)
class ServiceSpec:
    """A declared (or discovered) SGLang server, router or gateway on a host."""

    role: Role
    port: int
    unit: str | None = None
    metrics_port: int | None = None
    log_file: str | None = None


@dataclass(frozen=True)
class SlurmTarget:
    """A host reached inside a Slurm job (pdforensics.slurm): its job, its node, the Pyxis
    container its steps run in, and the job's log files found for that node."""

    job_id: str
    node: str
    container: str | None = None
    worker_logs: tuple[tuple[str, str], ...] = ()  # (role, path) from {node}_{role}_w{n} files
    job_log: str | None = None  # the job's StdOut (or StdErr) file
    via_ssh: bool = False  # reach the node over SSH instead of srun (--slurm-ssh)


@dataclass(frozen=True)
class HostSpec:
    """One host of the cluster as the cluster file or the command line gives it."""

    name: str
    address: str  # "local" means no SSH
    port: int | None = None
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    sudo: bool = False
    services: tuple[ServiceSpec, ...] = ()
    proxy_jump: str | None = None
    nvidia_smi: str = "nvidia-smi"
    simulated_gpu: bool = False
    py_spy: str = "py-spy"
    runner: bool = True  # one exec channel runs all commands (False: one channel per command)
    runner_sudo: bool = True  # with sudo: the runner starts under `sudo -n`, once (False: per command)
    slurm: SlurmTarget | None = None  # run every command through `srun --overlap` into a job
    # discovery's scope on a shared node (`--port`, or no cluster file): only SGLang services on
    # these ports are captured (empty: any port); `all_users` False keeps another user's
    # services listed but not captured (no py-spy, no environ, no probe)
    scope_ports: tuple[int, ...] = ()
    all_users: bool = True

    @property
    def is_local(self) -> bool:
        return self.address == "local"


@dataclass(frozen=True)
class ClusterSpec:
    """The whole cluster: a name and its hosts."""

    name: str
    hosts: tuple[HostSpec, ...]
    store: str | None = None
    accept_new_host_keys: bool = False
    extra: dict[str, object] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class ProcessInfo:
    """One SGLang-related process found on a host (a row of `ps` plus what discovery adds)."""

    pid: int
    ppid: int
    state: str  # first letter of ps STAT: R S D Z T t I
    start_epoch: float | None
    threads: int
    rss_kb: int
    args: str
    kind: str  # server | scheduler | detokenizer | tokenizer | router | other
    role: Role | None = None
    port: int | None = None
    rank: str | None = None  # "TP0", "DP1_TP3", ...
    root_pid: int | None = None  # pid of the server/router this process belongs to
