"""The diagnosis as lines a person reads first: terminal text and Markdown (the report builds
its own view from the same Diagnosis). Every claim points at its evidence (``source:line``)."""

from __future__ import annotations

from collections.abc import Callable

from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Diagnosis

WEDGE_WORDS = {True: "yes: requests stuck", False: "no", None: "not established"}


def value_or_open(x: str | None) -> str:
    return "not established" if x in (None, NOT_ESTABLISHED) else str(x)


def clue_line(c: Clue) -> str:
    where = c.where()
    who = " ".join(x for x in (c.host, c.role, c.rank) if x)
    return f"{c.key} [{c.label}]{' ' + who if who else ''}: {c.text}" + (f"  ({where})" if where else "")


def chain_lines(d: Diagnosis) -> list[str]:
    out = []
    for link in d.chain[:8]:
        cause, cons = d.clues[link.cause], d.clues[link.consequence]
        out.append(f"{cause.key} ({cause.where()}) -> {cons.key} ({cons.where()}): {link.why}")
    if len(d.chain) > 8:
        out.append(f"... {len(d.chain) - 8} more consequences")
    return out


def diagnosis_text(d: Diagnosis, field: Callable[[object], str] = str) -> list[str]:
    """Terminal lines; ``field`` neutralises host text (pdforensics.terminal.field)."""
    lines = [f"DIAGNOSIS ({d.confidence} confidence): {field(d.headline)}",
             f"  stage: {value_or_open(d.stage)}   side: {value_or_open(d.side)}   "
             f"suspect: {field(value_or_open(d.suspect))}   wedge: {WEDGE_WORDS[d.wedge]}   "
             f"root cause: {field(value_or_open(d.root_cause))}"]
    for claim in d.claims:
        lines.append(f"  why: {field(claim.text)}")
        lines.extend(f"    - {field(clue_line(d.clues[i]))}" for i in claim.clues[:3])
    chain = chain_lines(d)
    if chain:
        lines.append("  cause -> consequence:")
        lines.extend(f"    {field(x)}" for x in chain)
    lines.extend(f"  to decide: {field(x)}" for x in d.decide)
    lines.extend(f"  check next: {field(x)}" for x in d.next_checks)
    lines.extend(f"  not read: {field(x)}" for x in d.notes)
    return lines


def diagnosis_markdown(d: Diagnosis, code: Callable[..., str],
                       escape: Callable[..., str]) -> list[str]:
    """Markdown lines: host text in code spans (``code``), our prose escaped (``escape``)."""
    out = [f"**Diagnosis** ({escape(d.confidence)} confidence): {code(d.headline)}", "",
           f"- stage {code(value_or_open(d.stage))}, side {code(value_or_open(d.side))}, suspect "
           f"{code(value_or_open(d.suspect))}, wedge {escape(WEDGE_WORDS[d.wedge])}, root cause "
           f"{code(value_or_open(d.root_cause))}"]
    for claim in d.claims:
        out.append(f"- why: {code(claim.text)}")
        out.extend(f"  - {code(clue_line(d.clues[i]), 300)}" for i in claim.clues[:2])
    out.extend(f"- cause → consequence: {code(x, 300)}" for x in chain_lines(d)[:4])
    out.extend(f"- to decide: {escape(x)}" for x in d.decide[:2])
    out.extend(f"- check next: {escape(x)}" for x in d.next_checks[:3])
    return out
