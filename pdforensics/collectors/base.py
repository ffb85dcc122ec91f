"""What a collector is: a declarative source plus the job that runs it on one target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pdforensics.collectors.feeds import Feed
from pdforensics.model import HostSpec, ProcessInfo, Scope
from pdforensics.sglang.discovery import Service

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


@dataclass(frozen=True)
class Source:
    """One kind of evidence, declared once: its command (``build``), its archive path
    (``raw/<host>/<key>.<extension>``), its parser and the view it feeds."""

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
    redact_environ: bool = False
    # exit codes that mean "timed out": coreutils timeout (124, 137 after -k), curl (28)
    timeout_exits: tuple[int, ...] = (124, 137)
    feeds: Feed | None = None  # the view of the loaded capture its reading fills
    # a file read: the path whose bytes are the evidence, read without a shell where the
    # transport can (Transport.read_file); `build` stays the command run where it cannot
    reads: Callable[[HostSpec, Target], str] | None = field(default=None, compare=False)
    tail: bool = False  # read the file's last max_bytes (from a whole line), as `tail -c`


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
