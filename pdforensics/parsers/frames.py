"""Shared dataclasses for parsed stacks: py-spy, faulthandler, watchdog logs, goroutines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DumpKind = Literal["pyspy", "pyspy-json", "watchdog", "faulthandler", "goroutines", "pystack", "gdb",
                   "cuda-gdb",
                   "traceback"]


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame. ``file`` is as the dump printed it (short name or full path)."""

    function: str
    file: str = ""
    line: int | None = None
    native: bool = False
    offset: str = ""  # Go "+0x1d" (SIGQUIT/debug=2) or debug=1 pc offset
    locals: tuple[tuple[str, str], ...] = ()  # py-spy --locals: (name, repr)

    def location(self) -> str:
        """``file:line``, ``file`` or ``""``."""
        if self.line is not None:
            return f"{self.file}:{self.line}"
        return self.file

    def __str__(self) -> str:
        loc = self.location()
        return f"{self.function} ({loc})" if loc else self.function


@dataclass(frozen=True, slots=True)
class ThreadStack:
    """A thread (or goroutine, or a debug=1 group of ``count`` goroutines); leaf frame first."""

    thread_id: str
    name: str | None
    state: str  # py-spy: idle|active|active+gil|gil; Go: "select", "IO wait", ...; "" unknown
    frames: tuple[Frame, ...]
    wait_minutes: int | None = None
    created_by: Frame | None = None
    created_in: str | None = None  # id of the goroutine that created this one
    originating_from: str | None = None  # Go "[originating from goroutine N]"
    count: int = 1
    current: bool = False  # faulthandler "Current thread"
    locked_to_thread: bool = False
    goroutine: bool = False

    @property
    def leaf(self) -> Frame | None:
        return self.frames[0] if self.frames else None


@dataclass(frozen=True, slots=True)
class ProcessDump:
    """All threads of one process as one dump showed them (or the error it printed)."""

    kind: DumpKind
    threads: tuple[ThreadStack, ...]
    pid: int | None = None
    command: str = ""  # "Process N: <cmdline>" (py-spy) or the process title
    python_version: str | None = None
    parent_pid: int | None = None
    parent_command: str = ""
    rank: str | None = None  # "TP3", "DP1_TP3" (watchdog prefix)
    timestamp: str | None = None  # watchdog log time, as printed
    service: str | None = None  # docker-compose service prefix
    error: str | None = None  # py-spy failure text instead of a dump
    truncated: bool = False  # the text ended mid-line (a byte cap or a killed py-spy): the cut line dropped
    crash: str | None = None  # faulthandler's "Fatal Python error: X": the current thread crashed


@dataclass(frozen=True, slots=True)
class PyspyFailure:
    """Why py-spy did not produce a dump, and what fixes it."""

    reason: str  # not_installed|permission|no_such_process|not_python|suspend_failed|timeout|...
    message: str  # the line of py-spy output that says so
    fix: str
