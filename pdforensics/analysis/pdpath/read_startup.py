"""Lines that say a program failed while starting ("EngineCore failed to start.", "Engine core
initialization failed. See root cause above.", "Failed to initialize executor on rank 1"),
and a launcher that keeps waiting for a part of itself to start.

A start-up failure line reports a failure whose cause is printed elsewhere (it says so: "see
root cause above"): a consequence, at stage ``startup``. The reasoning pass then places the
file's other failures there too (reason._stage_of: the stage a file's failure lines agree on).

A launcher printing "Waiting for ... to start" (or "... to be ready") again and again, to the
end of its log, has a part that never came up: a start-up that hangs (vLLM's engine-core wait
loop prints it every 10 s while it waits; TGI's launcher, for each shard not ready).
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import has_any, lines_with, marks
from pdforensics.parsers.logtime import parse_log_timestamp

#: words of a start-up that failed (as lower case finds them)
_FAILED = ("failed to start", "initialization failed", "failed to initiali", "init failed",
           "startup failed", "error loading",
           "capture cuda graph failed")  # sglang cuda_graph_runner.__init__, at start-up
#: an operation that could not start, not the program ("Master failed to start put operation")
_OPERATION = linear.compile(r"failed to start (?:the |a )?\w{1,20} (?:operation|transfer|request)")
_WAITING = "waiting for"
_TO_START = ("to start", "to be ready")  # vLLM's engine core; TGI's shards
#: the marks searched for: each phrase as printed at a line's start and inside one
_MARKS = marks(*_FAILED, *(w[0].upper() + w[1:] for w in _FAILED), *_TO_START)
_MAX_TEXT = 500
_MAX_LINES = 20  # a few are enough to place the failure
_WAITS_TO_HANG = 3  # this many waits for a part to start, with nothing after them: a hang
_SKIP_KINDS = ("metrics", "server_info", "load", "goroutines")  # (a log with a traceback is "stacks")


@reader("startup_lines")
def startup_clues(src: Source) -> Iterator[Clue]:
    """Start-up failure lines (consequences at stage startup) and a start-up wait that never
    ends (see the module docstring)."""
    if not src.text or src.kind in _SKIP_KINDS or not has_any(src.text, _MARKS):
        return
    found = lines_with(src.text, _MARKS)
    waits: list[tuple[int, str]] = []
    n = 0
    for no, line in found:
        low = line.lower()
        if _WAITING in low and any(w in low for w in _TO_START):
            waits.append((no, line))
            continue
        if not any(w in low for w in _FAILED) or _OPERATION.search(low):
            continue
        n += 1
        if n > _MAX_LINES:
            break
        yield Clue(key="STARTUP_FAILED", label="consequence", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, stage="startup", wedge=False, strength=1,
                   why="the program says it failed while starting; what failed is the error "
                       "printed with it")
    if len(waits) >= _WAITS_TO_HANG and n == 0 and waits[-1][0] >= _last_line(src.text):
        no, line = waits[-1]
        yield Clue(key="STARTUP_WAITING", label="consequence", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, stage="startup", wedge=True, strength=1,
                   why=f"printed {len(waits)} times and nothing after it: the part it waits "
                       "for never started; its own log says why")


def _last_line(text: str) -> int:
    """The number of the last non-empty line (the text is not copied to find it)."""
    end = len(text)
    while end and text[end - 1].isspace():
        end -= 1
    return text.count("\n", 0, end) + 1 if end else 0
