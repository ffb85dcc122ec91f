"""The entry point: sources (+ the rules' findings) -> clues -> one Diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pdforensics.analysis.pdpath.readers  # noqa: F401  (registers the readers)
from pdforensics.analysis.findings import Finding
from pdforensics.analysis.pdpath.from_findings import finding_clues
from pdforensics.analysis.pdpath.model import Clue, Diagnosis
from pdforensics.analysis.pdpath.reason import diagnose
from pdforensics.analysis.pdpath.sources import Source, ordered_readers

#: evidence whose quiet reading (no failure in it) says nothing is held; a debugger's
#: backtrace is taken of a process already suspected of hanging, so it is not among them
_QUIET_KINDS = frozenset({"log", "stacks", "goroutines", "metrics", "load", "server_info"})


def _shows_the_program(src: Source) -> bool:
    """The source is of a kind whose quiet reading says nothing is held, and it shows the
    program's own state: not a debugger's backtrace, not a goroutine dump with only the
    runtime's goroutine 0 in it."""
    if src.kind not in _QUIET_KINDS or any(d.kind in ("gdb", "cuda-gdb") for d in src.dumps):
        return False
    return src.kind != "goroutines" or any(g.thread_id not in ("0", "?") for g in src.goroutines)


def read_all(sources: Sequence[Source]) -> tuple[list[Clue], list[str]]:
    """Every registered reader over every source: the clues, and a note per crashed reader."""
    clues: list[Clue] = []
    notes: list[str] = []
    order = ordered_readers()
    for src in sources:
        for r in order:
            try:
                clues.extend(r.fn(src))
            except Exception as exc:  # one reader's bug never loses the others' evidence
                notes.append(f"reader {r.name} failed on {src.path}: {type(exc).__name__}: {exc}")
    return _fallbacks_unplaced(clues), notes


#: the readers that read a line only when no other reader placed it (read_errors.py)
_FALLBACK = frozenset({"LOG_ERROR", "EXCEPTION_LINE"})


def _fallbacks_unplaced(clues: list[Clue]) -> list[Clue]:
    """A line another reader placed keeps that reading only (read_errors: the fallbacks); an
    exception line another reader called noise stays noise, and one its logger marked as an
    error is read once."""
    placed: set[tuple[str, int | None]] = set()
    quiet: set[tuple[str, int | None]] = set()
    # an error line a reader judged harmless (a transfer error the run got past)
    harmless = {(c.source, c.line) for c in clues if c.label == "noise" and c.line is not None
                and c.key.startswith("TRANSFER_")}
    for c in clues:
        if c.line is None or c.key == "EXCEPTION_LINE":
            continue
        if c.key != "LOG_ERROR" and c.label in ("cause", "consequence", "progress"):
            placed.add((c.source, c.line))
        else:
            quiet.add((c.source, c.line))  # noise, or the error-line fallback of the line
    return [c for c in clues if c.key not in _FALLBACK or not (
        (c.source, c.line) in placed or (c.key == "EXCEPTION_LINE" and (c.source, c.line) in quiet)
        or (c.source, c.line) in harmless)]


def diagnose_evidence(sources: Sequence[Source], findings: Sequence[Finding] = ()
                      ) -> Diagnosis:
    """Read every source, add the findings that show a wedge over time, reason once."""
    clues, notes = read_all(sources)
    clues.extend(finding_clues(findings))
    quiet = sum(1 for s in sources if _shows_the_program(s))
    d = diagnose(clues, sources_read=quiet)
    return replace(d, notes=tuple(notes)) if notes else d
