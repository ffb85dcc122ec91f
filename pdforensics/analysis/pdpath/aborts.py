"""A process that aborted itself after an error it printed: SIGABRT (abort(): glibc's heap
check, ``std::terminate``, a failed assert) reported by a signal handler just after a failure
a reader knows is what that failure led to, not a second cause; so is glibc's heap check
("double free or corruption") printed after another error."""

from __future__ import annotations

import bisect
from dataclasses import replace

from pdforensics.analysis.pdpath.model import Clue

_ABORT_WORDS = ("Aborted (6)", "SIGABRT", "signal 6 (")
_NEAR_LINES = 40  # the error is at most this many lines above the abort


def self_aborts(clues: list[Clue]) -> list[Clue]:
    """An abort's signal, or glibc's heap check before it, with a cause of its source just
    above, relabelled (the signal after a heap check is that check's consequence)."""
    aborts = [i for i, c in enumerate(clues) if c.label == "cause" and c.line is not None and (
        c.key == "HEAP_CORRUPTION" or c.key == "NATIVE_SIGNAL"
        and any(w in c.text for w in _ABORT_WORDS))]
    if not aborts:
        return clues
    above: dict[str, list[int]] = {}
    for c in clues:
        if c.label == "cause" and c.strength >= 2 and c.key != "NATIVE_SIGNAL" and c.line:
            above.setdefault(c.source, []).append(c.line)
    for lines_of in above.values():
        lines_of.sort()
    out = list(clues)
    for i in aborts:
        c = out[i]
        lines = above.get(c.source, [])
        k = bisect.bisect_left(lines, c.line or 0) - 1  # the last cause above it
        if k >= 0 and (c.line or 0) - lines[k] <= _NEAR_LINES:
            out[i] = replace(c, label="consequence",
                             why=f"{c.why}; the process aborted itself after the error at line "
                                 f"{lines[k]}")
    return out
