"""What a collector is: a declarative source plus the job that runs it on one target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from pdforensics.collectors.feeds import Feed
from pdforensics.model import HostSpec, ProcessInfo, Redaction, Scope
from pdforensics.sglang.discovery import Discovery, Service

# Priorities: lower runs first. Cheap reads first, calls that can hang on a wedged box last.
DISCOVERY, CHEAP, NORMAL, SLOW, STACKS = 0, 1, 2, 3, 4
KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Target:
    """What a process/unit/endpoint-scoped source points at."""

    process: ProcessInfo | None = None
    service: Service | None = None
    unit: str | None = None
    sample: int | None = None  # /metrics sample number, py-spy dump number
    path: str = ""  # HTTP path

    @property
    def pid(self) -> int:
        """The process of a process-scoped source."""
        assert self.process is not None
        return self.process.pid

    @property
    def unit_name(self) -> str:
        """The systemd unit of a unit-scoped source."""
        assert self.unit is not None
        return self.unit

    @property
    def log_file(self) -> str:
        """The log file the target's service declares."""
        assert self.service is not None and self.service.log_file
        return self.service.log_file

    @property
    def label(self) -> str:
        """Stable part of the result key: pid1234, decode.30001, a unit name."""
        parts = []
        if self.process is not None:
            parts.append(f"pid{self.process.pid}")
        elif self.service is not None:
            parts.append(f"{self.service.role}.{self.service.port}")
        if self.unit:
            parts.append(self.unit)
        if self.sample is not None:
            parts.append(f"s{self.sample}")
        return ".".join(parts)


class Runs(str, Enum):
    """When a source runs: what the planner (capture/planner.py) binds it to."""

    PER_HOST = "per host"  # once per host, from the start (beside discovery)
    PER_HOST_DISCOVERED = "per host, after discovery"
    PER_SERVER = "per server"  # each SGLang server found (Target.service)
    PER_ROUTER = "per router"  # each router or gateway found
    PER_SERVICE = "per service"  # each server and router
    PER_UNIT = "per unit"  # each systemd unit a service runs in (Target.unit)
    PER_PROCESS = "per process"  # each SGLang process (Target.process)
    FOLLOW_UP = "follow-up"  # only after another source's result: a `fallback`, the request-log window
    PER_POD = "per pod"  # by kubectl on this machine, beside the capture (k8s/sidecar.py)
    POD_SETUP = "per pod, before the capture"  # k8s/debug.py, with --k8s-debug


class Switch(str, Enum):
    """The capture option that turns a source on: a field of capture.planner.PlanOptions. The
    profile table (capture/profiles.py) says which profiles turn each on, and flags change it."""

    STACKS = "stacks"
    PROBES = "probes"
    GPU = "gpu"
    VERSIONS = "versions"
    LOGS = "logs"
    SGLANG_SOURCE = "sglang_source"
    DOCTOR = "doctor"


class Repeat(str, Enum):
    """A source taken several times per target: sample 1 is planned, each next one when the
    previous ends (capture/planner.py spaces them)."""

    SAMPLES = "samples"  # PlanOptions.samples, `interval_s` apart (/metrics)
    DUMPS = "dumps"  # PlanOptions.stack_dumps, spanning >= STUCK_SPAN_S (py-spy)


@dataclass(frozen=True)
class Absence:
    """How a tool answers on a host without the thing it reads (nvidia-smi without a GPU): that
    answer (exit status and one of the texts), or a tool that cannot run at all, is an expected
    absence, never a gap in the capture (capture/completeness.py)."""

    exit_status: int
    texts: tuple[str, ...]


#: a plan condition beyond `runs` and `switch`: (host, what discovery found, the target)
Only = Callable[[HostSpec, Discovery, Target], bool]


@dataclass(frozen=True)
class Source:
    """One kind of evidence, declared once: its command (``build``), its archive path
    (``raw/<host>/<key>.<extension>``), its parser, the view it feeds and its plan: when it
    runs (``runs``, ``switch``, ``only``, ``once_per``, ``repeats``, ``fallback``), whether a
    silent timeout is retried and whether `diff` reads it as configuration."""

    name: str
    description: str
    scope: Scope
    build: Callable[[HostSpec, Target], tuple[str, ...]] = field(compare=False)
    timeout_s: float
    max_bytes: int
    priority: int
    parser: str | None  # "module:function" under pdforensics.parsers, applied off the hot path
    sample: str | None  # file under tests/data that shows the real output format
    privileged: bool = False  # runs through `sudo -n` on hosts with sudo = true
    extension: str = "txt"
    redaction: Redaction = "text"  # how its output is redacted (model.Redaction)
    # exit codes that mean "timed out": coreutils timeout (124, 137 after -k), curl (28)
    timeout_exits: tuple[int, ...] = (124, 137)
    feeds: Feed | None = None  # the view of the loaded capture its reading fills
    # a file read: the path whose bytes are the evidence, read without a shell where the
    # transport can (Transport.read_file); `build` stays the command run where it cannot
    reads: Callable[[HostSpec, Target], str] | None = field(default=None, compare=False)
    tail: bool = False  # read the file's last max_bytes (from a whole line), as `tail -c`
    # -- its plan --------------------------------------------------------------------------
    runs: Runs = Runs.PER_HOST
    switch: Switch | None = None  # None: in every profile
    only: Only | None = field(default=None, compare=False)  # and only where this holds
    once_per: Callable[[Target], str] | None = field(default=None, compare=False)  # one target per key
    repeats: Repeat | None = None
    fallback: Source | None = None  # run instead when this endpoint answers 404 (an old name)
    retried: bool = False  # a timeout with no output runs once more: it says nothing of the cluster
    config: bool = False  # `diff` reads it (load_capture skips the others for the diff)
    absent: Absence | None = None  # the host may lack what it reads: not a gap when it does


REGISTRY: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add a source to the explicit registry (names are unique)."""
    if source.name in REGISTRY:
        raise ValueError(f"duplicate source {source.name}")
    REGISTRY[source.name] = source
    return source


@dataclass(frozen=True)
class Job:
    """A source bound to a target on one host, ready to run at or after not_before."""

    source: Source
    target: Target
    argv: tuple[str, ...]
    not_before: float = 0.0
    url: str | None = None
    read: str | None = None  # the file a file-read source reads (Source.reads)
    body: bytes | None = None  # what a POST sends (JSON), e.g. /configure_logging

    @property
    def key(self) -> str:
        label = self.target.label
        return f"{self.source.name}.{label}" if label else self.source.name

    @property
    def priority(self) -> int:
        return self.source.priority
