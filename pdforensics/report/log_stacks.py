"""Rows of the stacks SGLang wrote into its own logs (watchdog py-spy dumps, faulthandler)."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.analysis.log_stacks import log_dumps
from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.report.common import utc
from pdforensics.views.loaded import LoadedCapture

MAX_ROWS = 50
MAX_FRAMES = 12


@dataclass(frozen=True)
class LogStackRow:
    who: str  # host role rank pid
    when: str  # the log line's time, UTC, after the host's clock offset
    source: str  # log:journal | log:log_file, and the dump's kind
    threads: int
    thread: str  # the thread shown (the main thread or the first one)
    frames: tuple[str, ...]  # its frames, leaf first
    error: str | None


def _row(ld: LabelledDump) -> LogStackRow:
    d = ld.dump
    main = next((t for t in d.threads if t.name == "MainThread" or t.current),
                d.threads[0] if d.threads else None)
    who = f"{ld.host} {ld.role or '?'} {ld.rank or '?'}" + (f" pid {d.pid}" if d.pid else "")
    return LogStackRow(
        who=who, when=utc(ld.taken_at) if ld.taken_at else (d.timestamp or "—"),
        source=f"{ld.source} ({d.kind})", threads=len(d.threads),
        thread=(main.name or main.thread_id) if main is not None else "—",
        frames=tuple(str(f) for f in main.frames[:MAX_FRAMES]) if main is not None else (),
        error=d.error)


def log_stack_rows(capture: LoadedCapture, offsets: dict[str, float] | None = None
                   ) -> tuple[LogStackRow, ...]:
    """Newest first (the wedge's own dump before older ones), at most MAX_ROWS."""
    dumps = sorted(log_dumps(capture, offsets), key=lambda ld: -(ld.taken_at or 0.0))
    return tuple(_row(ld) for ld in dumps[:MAX_ROWS])
