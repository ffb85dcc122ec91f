"""Join clues across lines, files and hosts: which causes are really consequences.

A cause is demoted to a consequence (with ``why`` saying what it follows from) when:
- its own line also carries a consequence the source defines ("from another rank": the rank
  recorded no failure of its own; "Aborted by AbortReq.": the abort path);
- it is a scheduler's "hit an exception" envelope and an exception line of that traceback
  (just after it, or the tail printed just before it) says what was raised;
- it is a weak failure report (strength 1: "Decode handshake failed", "Decode transfer
  failed", ...) and a stronger cause comes before it in the same source, or shares its rid or
  bootstrap room anywhere.
An exception line inside a scheduler's envelope takes the envelope's rank.
"""

from __future__ import annotations

from dataclasses import replace

from pdforensics.analysis.pdpath.model import Clue

_ENVELOPE = "SCHEDULER_EXCEPTION"
_NEAR_LINES = 200  # an exception line this close to an envelope belongs to its traceback


def _same_line_consequence(clues: list[Clue]) -> list[Clue]:
    marks: dict[tuple[str, int | None], Clue] = {(c.source, c.line): c for c in clues
             if c.label == "consequence" and c.strength >= 2 and c.line is not None}
    out = []
    for c in clues:
        m = marks.get((c.source, c.line))
        if c.label == "cause" and m is not None:
            c = replace(c, label="consequence", why=f"{c.why}; the line says {m.key}: "
                                                     f"{m.why}")
        out.append(c)
    return out


def _envelopes(clues: list[Clue]) -> list[Clue]:
    out = list(clues)
    exc = [i for i, c in enumerate(out) if c.key == "PYTHON_EXCEPTION"]
    for i, c in enumerate(out):
        if c.key != _ENVELOPE or c.line is None:
            continue
        near = [j for j in exc if out[j].source == c.source and out[j].line is not None
                and abs(out[j].line - c.line) <= _NEAR_LINES]  # type: ignore[operator]
        if not near:
            continue
        j = min(near, key=lambda k: abs((out[k].line or 0) - (c.line or 0)))
        out[i] = replace(c, label="consequence",
                         why="the scheduler process died of the exception its traceback ends "
                             f"with (line {out[j].line})")
        if out[j].rank is None and c.rank is not None:
            out[j] = replace(out[j], rank=c.rank, role=out[j].role or c.role,
                             time=out[j].time or c.time)
    return out


#: sglang's failure reports: each quotes the KVTransferError reason of an earlier failure
REPORT_KEYS = frozenset({"DECODE_HANDSHAKE_FAILED", "DECODE_TRANSFER_FAILED",
                         "PREFILL_BOOTSTRAP_FAILED", "PREFILL_TRANSFER_FAILED"})


def _reports(clues: list[Clue]) -> list[Clue]:
    out = list(clues)
    strong = [c for c in out if c.label == "cause" and c.strength >= 2]
    report_lines = {(c.source, c.line) for c in out if c.key in REPORT_KEYS}
    for i, c in enumerate(out):
        on_report = (c.source, c.line) in report_lines
        if c.label != "cause" or (c.strength != 1 and not on_report):
            continue
        up = next((s for s in strong if _before(s, c) and (s.source, s.line) != (c.source, c.line)
                   and (s.source == c.source or set(s.rids) & set(c.rids)
                        or set(s.rooms) & set(c.rooms))), None)
        if up is not None:
            out[i] = replace(c, label="consequence",
                             why=f"{c.why}; follows {up.key} at {up.where()}")
    return out


def _before(a: Clue, b: Clue) -> bool:
    if a.time is not None and b.time is not None and a.time != b.time:
        return a.time < b.time
    if a.source == b.source and a.line is not None and b.line is not None:
        return a.line < b.line
    return a.time is not None and b.time is not None and a.time == b.time


def demote_consequences(clues: list[Clue]) -> list[Clue]:
    """The clues with causes that follow from other evidence relabelled as consequences."""
    return _reports(_envelopes(_same_line_consequence(clues)))
