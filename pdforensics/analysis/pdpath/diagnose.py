"""The entry point: sources (+ the rules' findings) -> clues -> one Diagnosis."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pdforensics.analysis.pdpath.readers  # noqa: F401  (registers the readers)
from pdforensics.analysis.findings import Finding
from pdforensics.analysis.pdpath.model import Clue, Diagnosis
from pdforensics.analysis.pdpath.reason import diagnose
from pdforensics.analysis.pdpath.sources import READERS, Source


def read_all(sources: Sequence[Source]) -> tuple[list[Clue], list[str]]:
    """Every registered reader over every source: the clues, and a note per crashed reader."""
    clues: list[Clue] = []
    notes: list[str] = []
    for src in sources:
        for r in READERS.values():
            try:
                clues.extend(r.fn(src))
            except Exception as exc:  # one reader's bug never loses the others' evidence
                notes.append(f"reader {r.name} failed on {src.path}: {type(exc).__name__}: {exc}")
    return clues, notes


_ROLES = ("prefill", "decode", "router")


def finding_clues(findings: Sequence[Finding]) -> Iterator[Clue]:
    """A finding that rests on evidence across time (frozen counters over samples, a dead rank
    with frozen progress) is a clue that requests are stuck on that service."""
    for f in findings:
        if not f.wedge:
            continue
        role = next((r for r in _ROLES if f.subject and f" {r}:" in f" {f.subject}"), None)
        yield Clue(key=f.key, label="cause", text=f.title, source="analysis", role=role,
                   side=role, wedge=True, strength=2,  # type: ignore[arg-type]
                   why="a rule's finding over samples taken apart in time")


def diagnose_evidence(sources: Sequence[Source], findings: Sequence[Finding] = ()
                      ) -> Diagnosis:
    """Read every source, add the findings that show a wedge over time, reason once."""
    clues, _notes = read_all(sources)
    clues.extend(finding_clues(findings))
    return diagnose(clues)
