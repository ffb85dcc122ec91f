"""What a capture shows while it runs: one block updated in place on a terminal (a line per
host: phase, collectors done of planned, elapsed of the deadline), plain lines otherwise.

Everything goes to stderr, so `--json` on stdout stays one clean object. The block's own
cursor movements go through terminal.write_control; host text through terminal.field.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from pdforensics.collectors.base import CHEAP, DISCOVERY, NORMAL, SLOW
from pdforensics.terminal import field, write_control

REDRAW_S = 0.5


def phase_name(priority: int) -> str:
    if priority <= DISCOVERY:
        return "discovery"
    if priority in (CHEAP, NORMAL):
        return "metrics"
    return "slow sources" if priority == SLOW else "stacks"


@dataclass
class HostLine:
    phase: str = "connecting"
    done: int = 0
    planned: int = 0
    note: str = ""
    finished: bool = False


class PlainProgress:
    """Not a terminal: a line per event (found N services, unreachable, done)."""

    def __init__(self, out: TextIO):
        self.out = out

    def __call__(self, host: str, text: str) -> None:
        self.out.write(f"  {field(host)}: {field(text)}\n")
        self.out.flush()

    def close(self) -> None:
        pass


class LiveProgress:
    """A terminal: the block of host lines redrawn in place every REDRAW_S and on each event."""

    def __init__(self, out: TextIO, hosts: list[str], deadline_s: float):
        self.out = out
        self.hosts = {h: HostLine() for h in hosts}
        self.deadline_s = deadline_s
        self.t0 = time.monotonic()
        self._drawn = 0  # lines of the block on screen
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()

    def __call__(self, host: str, text: str) -> None:
        line = self.hosts.setdefault(host, HostLine())
        line.note = text
        if text.startswith(("done", "unreachable")):
            line.finished = True
            line.phase, _, line.note = text.partition(": ")  # "done: 31 results" -> done | 31 results
        self.redraw()

    def tick(self, host: str, source: str, priority: int, done: int, planned: int) -> None:
        line = self.hosts.setdefault(host, HostLine())
        line.phase, line.done, line.planned = phase_name(priority), done, planned
        self.redraw()

    def render(self) -> list[str]:
        elapsed = time.monotonic() - self.t0
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        rows = [f"capturing {len(self.hosts)} host(s): {elapsed:4.0f}s of {self.deadline_s:g}s"]
        name_w = max((len(h) for h in self.hosts), default=4)
        for host, ln in self.hosts.items():
            count = f"{ln.done}/{ln.planned}" if ln.planned else ""
            text = f"  {field(host):<{name_w}}  {ln.phase:<12} {count:>7}  {field(ln.note)}"
            rows.append(text if len(text) <= width else text[:width - 1] + "…")
        return rows

    def redraw(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._draw(self.render())

    def _draw(self, rows: list[str]) -> None:
        try:
            if self._drawn:
                write_control(self.out, f"\x1b[{self._drawn}A")  # up to the block's first line
            for row in rows:
                write_control(self.out, "\x1b[2K")
                self.out.write(row + "\n")
            self._drawn = len(rows)
            self.out.flush()
        except OSError:  # the terminal hung up: the capture goes on without a display
            self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(REDRAW_S):
            self.redraw()

    def close(self) -> None:
        """Draw the final state once more and leave it on screen; the cursor ends below it."""
        with self._lock:
            if not self._stop.is_set():
                self._draw(self.render())
                self._stop.set()
        self._thread.join(timeout=1.0)


def terminal_progress(hosts: list[str], deadline_s: float,
                      quiet: bool = False) -> LiveProgress | PlainProgress | None:
    """A live block on a terminal, plain lines otherwise (stderr), nothing when quiet."""
    if quiet:
        return None
    if sys.stderr.isatty():
        return LiveProgress(sys.stderr, hosts, deadline_s)
    return PlainProgress(sys.stderr)
