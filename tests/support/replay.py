"""The one fake transport of the capture tests that need no host (the capture's scheduling,
retries and sidecars; the real transports and the end-to-end runs have their own tests).

A `ReplayTransport` answers every command from its `reply(source)`, which a test overrides;
files and endpoints go through `run` too, as their cat/tail and curl commands. It records
what started when: `calls` (sources in the order their commands started) and `runs`
((source, started, ended) on the monotonic clock). `replay_hosts` makes `capture` open one
per host instead of a real connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

import pdforensics.capture.host_run as host_run
from pdforensics.model import CommandResult, HostSpec


@dataclass(frozen=True)
class Answer:
    """What one command gave: its output, exit status, a timeout or a transport error."""

    stdout: bytes = b""
    exit_status: int | None = 0
    timed_out: bool = False
    error: str | None = None


class ReplayTransport:
    """Answers each command at once with `reply(source)` (an empty success by default)."""

    forwarding_refused = False  # the Transport protocol's attribute

    def __init__(self, host: HostSpec) -> None:
        self.host = host
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.calls: list[str] = []  # sources in the order their commands started
        self.runs: list[tuple[str, float, float]] = []  # (source, started, ended), monotonic

    def reply(self, source: str) -> Answer:
        return Answer()

    def connect(self, timeout_s: float) -> None:
        return None

    def close(self) -> None:
        self.closed.set()

    def read_file(self, source: str, path: str, timeout_s: float, max_bytes: int,
                  tail: bool = False) -> CommandResult | None:
        return None  # files go through run(), as their cat/tail command

    def fetch(self, source: str, url: str, timeout_s: float, max_bytes: int) -> CommandResult | None:
        return None  # endpoints go through run(), as their curl command

    def run(self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int) -> CommandResult:
        t0 = time.monotonic()
        with self.lock:
            self.calls.append(source)
        answer = self.reply(source)
        with self.lock:
            self.runs.append((source, t0, time.monotonic()))
        return CommandResult(host=self.host.name, source=source, argv=tuple(argv),
                             exit_status=answer.exit_status, stdout=answer.stdout, stderr="",
                             duration_s=time.monotonic() - t0, started_at=time.time(),
                             timed_out=answer.timed_out, error=answer.error)

    def span(self, source: str) -> tuple[float, float]:
        """(started, ended) of the first command of `source`."""
        return next((a, b) for s, a, b in self.runs if s == source)


def replay_hosts(monkeypatch: pytest.MonkeyPatch,
                 make: Callable[[HostSpec], ReplayTransport]) -> list[ReplayTransport]:
    """The capture opens `make(host)` for every host; the transports it made, in order."""
    made: list[ReplayTransport] = []

    def factory(host: HostSpec, accept: bool = False) -> ReplayTransport:
        made.append(make(host))
        return made[-1]

    monkeypatch.setattr(host_run, "open_transport", factory)
    return made
