"""Frozen results of stack analysis: members, buckets, outliers, stuck threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pdforensics.parsers.frames import Frame, ProcessDump, PyspyFailure

Level = Literal["exact", "any_line", "function"]


@dataclass(frozen=True, slots=True)
class LabelledDump:
    """A parsed dump plus what the caller knows about where it came from."""

    dump: ProcessDump
    host: str = ""
    role: str | None = None
    rank: str | None = None
    taken_at: float | None = None  # epoch seconds
    source: str = ""  # file or collector name
    kind: str | None = None  # process kind from discovery (ranks without a title)


@dataclass(frozen=True, slots=True)
class Member:
    """One thread of one process on one host."""

    host: str
    pid: int | None
    rank: str | None
    thread_id: str
    thread_name: str | None
    role: str | None
    kind: str  # process kind from the title: scheduler, detokenizer, python, go ...
    source: str = ""

    def label(self) -> str:
        where = self.host or self.source or "?"
        proc = f"{where}:{self.pid}" if self.pid is not None else where
        bits = [proc]
        if self.role:
            bits.append(self.role)
        if self.rank:
            bits.append(self.rank)
        bits.append(self.thread_name or self.thread_id)
        return " ".join(bits)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Threads with the same stack at one level of detail."""

    level: Level
    count: int  # goroutine debug=1 groups count for their size
    states: tuple[str, ...]
    frames: tuple[Frame, ...]  # leaf first, from the first member
    members: tuple[Member, ...]
    leaf_class: str
    suspect: bool
    wait_min: int | None = None  # goroutines: minutes waiting
    wait_max: int | None = None


@dataclass(frozen=True, slots=True)
class Outlier:
    """A rank whose stack leaves the majority of its peers (same role and process kind)."""

    member: Member
    group: str
    diverges_at: Frame | None  # the member's first frame not on the majority path
    common: Frame | None  # the last frame shared with the majority
    majority_frame: Frame | None  # what the majority has instead
    majority: int
    group_size: int
    leaf_class: str
    reason: str


@dataclass(frozen=True, slots=True)
class StuckThread:
    """A thread whose stack did not change across consecutive dumps of its process."""

    member: Member
    frames: tuple[Frame, ...]
    stuck_for_s: float | None  # None when the dumps carry no time
    dumps: int
    leaf_class: str


@dataclass(frozen=True, slots=True)
class AllStuck:
    """Every rank of a role sits in the same non-idle frame and did not move."""

    role: str | None
    kind: str
    frame: Frame
    ranks: tuple[str, ...]
    leaf_class: str
    stuck_for_s: float | None


@dataclass(frozen=True, slots=True)
class DumpError:
    """A dump that is a py-spy failure, with its classification."""

    host: str
    pid: int | None
    rank: str | None
    source: str
    message: str
    failure: PyspyFailure | None


@dataclass(frozen=True, slots=True)
class StackReport:
    """Everything analyze_stacks found."""

    threads: int
    processes: int
    dumps: int
    noise_filtered: int
    noise_by_reason: tuple[tuple[str, int], ...]
    buckets: tuple[Bucket, ...]
    buckets_any_line: tuple[Bucket, ...]
    buckets_function: tuple[Bucket, ...]
    outliers: tuple[Outlier, ...]
    stuck: tuple[StuckThread, ...]
    all_stuck: tuple[AllStuck, ...]
    errors: tuple[DumpError, ...]
    long_waits: int = 0  # goroutines waiting >= 1 minute (Go prints the minutes)
    long_waits_unfiltered: int = 0  # of those, the ones a noise rule filtered (still shown)
    long_wait_noise: tuple[Bucket, ...] = ()  # their buckets, so a long wait is never hidden
    crashes: tuple[str, ...] = ()  # "SOURCE: Fatal Python error: X in the current thread T at F"
