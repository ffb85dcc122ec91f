"""Ray's worker-log prefix: a process started by Ray (an SGLang engine inside an RL trainer's
actor, a rollout manager) has every line it prints to the driver prefixed with the actor and
its pid: ``(RolloutRayActor pid=3549160) [2025-08-05 12:15:15 TP0] ...``, ``(pid=42, ip=10.0.0.2)
...``, and Ray's deduplication may end it with `` [repeated 6x across cluster]``. Readers of
SGLang, NCCL and torch lines read them without either; line numbers stay."""

from __future__ import annotations

from bisect import bisect_right

from pdforensics import linear
from pdforensics.parsers.linescan import strip_line_prefix

#: the prefix; its group is the actor and pid (logprefix reads it as the line's stream)
PREFIX = r"^\(((?:[A-Za-z_][\w.:-]{0,80} )?pid=\d{1,10})(?:, ip=[0-9a-fA-F.:]{1,45})?\) ?"
_PREFIX = linear.compile(PREFIX)
_PREFIX_B = linear.compile(PREFIX.encode(), linear.M)
_SAMPLE = 200
#: Ray's log deduplication: " [repeated 6x across cluster]" at the end of a line
DEDUP = linear.compile(r"\s*\[repeated \d{1,9}x across cluster\]$")


def ray_prefixed(text: str) -> bool:
    """At least a third of the first non-blank lines carry Ray's prefix."""
    if "pid=" not in text[:20000]:
        return False
    lines = [ln for ln in text[:50000].split("\n")[:_SAMPLE] if ln.strip()]
    hits = sum(1 for ln in lines if _PREFIX.match(ln) is not None)
    return bool(lines) and hits * 3 >= len(lines)


def strip_ray_prefix(text: str) -> str:
    """The text with Ray's prefix removed from every line that has one (one scan finds them)."""
    return strip_ray_prefix_runs(text)[0]


def prefix_runs(text: str) -> tuple[tuple[int, str], ...]:
    """(first line number, process) of each run of lines one process's prefix opens
    (``(Worker_TP0 pid=2940)`` -> ``Worker_TP0 pid=2940``), in order: what stripping the
    prefix loses, kept to name the process a failure line came from."""
    return strip_ray_prefix_runs(text)[1]


def strip_ray_prefix_runs(text: str) -> tuple[str, tuple[tuple[int, str], ...]]:
    """`strip_ray_prefix` and `prefix_runs` of one text, from one scan."""
    lines, found = strip_line_prefix(text, _PREFIX_B, _PREFIX)
    if not found:
        return text, ()
    runs: list[tuple[int, str]] = []
    for no, process in found:
        line = lines[no - 1]
        if line.endswith("across cluster]"):
            d = DEDUP.search(line)
            lines[no - 1] = line[:d.start()] if d is not None else line
        if not runs or runs[-1][1] != process:
            runs.append((no, process))
    return "\n".join(lines), tuple(runs)


def process_at(runs: tuple[tuple[int, str], ...], no: int) -> str | None:
    """The process whose prefix line ``no`` (or the run it is in) carried; None before any."""
    at = bisect_right(runs, (no, "\U0010ffff")) - 1
    return runs[at][1] if at >= 0 else None
