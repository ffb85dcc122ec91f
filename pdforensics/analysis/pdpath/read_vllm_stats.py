"""vLLM's periodic engine stats line, read over time: requests held with nothing moving.

vLLM logs every 10 s (v1 metrics/loggers.py; V0 llm_engine.py) "Avg prompt throughput: P
tokens/s, Avg generation throughput: G tokens/s, Running: R reqs, Waiting: W reqs, ...". When
the last lines of an engine all say R + W >= 1 with P = G = 0, the requests it holds have not
moved for that long, up to the end of the log: they are stuck in the engine (a consequence:
the lines do not say in which step or why). A run that ends with throughput again is a slow
spell, not a wedge, and is not read.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with
from pdforensics.parsers.logtime import parse_log_timestamp

_STATS = linear.compile(r"(?:(Engine \d{1,4}): )?Avg prompt throughput: ([\d.]{1,12}) tokens/s, "
                        r"Avg generation throughput: ([\d.]{1,12}) tokens/s, Running: (\d{1,7}) "
                        r"reqs(?:, Swapped: \d{1,7} reqs)?, (?:Waiting|Pending): (\d{1,7}) reqs")
_MARK = "Avg generation throughput"
_HELD_LINES = 3  # at least this many stats lines in a row (30 s at vLLM's interval)
_MAX_LINES = 20_000


@reader("vllm_engine_stats")
def vllm_stats_clues(src: Source) -> Iterator[Clue]:
    """An engine whose last stats lines show requests held and no token moving."""
    if _MARK not in src.text or src.kind in ("metrics", "server_info", "load"):
        return
    runs: dict[str, list[tuple[int, str]]] = {}  # engine -> its zero run at the end so far
    for no, line in first_lines_with(src.text, (_MARK,), _MAX_LINES):
        m = _STATS.search(line)
        if m is None:
            continue
        engine = m.group(1) or ""
        held = int(m.group(4)) + int(m.group(5))
        if float(m.group(2)) == 0 and float(m.group(3)) == 0 and held:
            runs.setdefault(engine, []).append((no, line))
        else:
            runs[engine] = []
    for engine, run in runs.items():
        if len(run) < _HELD_LINES:
            continue
        first, last = run[0], run[-1]
        t0, t1 = parse_log_timestamp(first[1]), parse_log_timestamp(last[1])
        span = f" over {t1 - t0:.0f} s" if t0 is not None and t1 is not None else ""
        yield Clue(key="VLLM_ENGINE_STALLED", label="consequence", text=first[1].strip()[:500],
                   source=src.path, line=first[0], time=t0, role=src.role, host=src.host,
                   stage="not_established",  # (on the path: which step, not said)
                   suspect=engine or None, wedge=True, strength=2,
                   why=f"vLLM's stats: requests running or waiting and no prompt or generated "
                       f"token in {len(run)} lines in a row{span}, to the end of the log: they "
                       "are stuck in the engine (which step, and why, the lines do not say)")
