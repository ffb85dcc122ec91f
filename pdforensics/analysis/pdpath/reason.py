"""One reasoning pass over the clues of a capture or of loose files -> a `Diagnosis`.

1. Join: a cause becomes a consequence when the evidence shows what it follows from (the
   same line says "from another rank" or "Aborted by AbortReq"; a scheduler's "hit an
   exception" wraps an exception line of its own traceback; a failure report follows a
   stronger cause of the same source, rid or bootstrap room).
2. The upstream cause: the strongest remaining cause, earliest first; its stage, side and
   suspect are the reading, filled in from the role of the server that printed it.
3. Where causes of equal strength point at different sides, the side is "not_established"
   and `decide` says what would tell them apart; a suspect is named only when the evidence
   names one (a rank that is the odd one out, an address, a goroutine), never when every
   rank reports the same.
4. With no cause at all (a control: busy, idle or healthy), the reading is where the work
   is, and never a wedge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pdforensics.analysis.pdpath.join import demote_consequences
from pdforensics.analysis.pdpath.model import (
    NOT_ESTABLISHED,
    Claim,
    Clue,
    Confidence,
    Diagnosis,
    Side,
    Stage,
)
from pdforensics.analysis.pdpath.narrate import checks_for, headline_of, link_chain

_FORWARD: dict[str, Stage] = {"prefill": "prefill_forward", "decode": "decode_forward"}


def _order(clues: Sequence[Clue]) -> list[int]:
    """Indexes in evidence order: by time where both are known, else as read."""
    return sorted(range(len(clues)), key=lambda i: (clues[i].time is None, clues[i].time or 0, i))


def _roles(clues: Sequence[Clue]) -> set[str]:
    return {c.role for c in clues if c.role in ("prefill", "decode", "router")}


def _sglang(clues: Sequence[Clue]) -> bool:
    """Is any of the evidence SGLang's own (a role, a rank prefix, a catalogued message)?"""
    return any(c.role is not None or c.rank is not None and c.rank.startswith(("TP", "DP", "PP"))
               for c in clues)


def _primary(clues: Sequence[Clue]) -> int | None:
    causes = [i for i in _order(clues) if clues[i].label == "cause"]
    if not causes:
        return None
    best = max(clues[i].strength for i in causes)
    return next(i for i in causes if clues[i].strength == best)


def _side_of(c: Clue, roles: set[str]) -> Side | None:
    if c.side is not None:
        return c.side
    role = c.role or (next(iter(roles)) if len(roles) == 1 else None)
    return role if role in ("prefill", "decode", "router") else None  # type: ignore[return-value]


def _stage_of(c: Clue, side: Side | None, roles: set[str], sglang: bool) -> Stage:
    if c.stage is not None:
        return c.stage
    role = c.role or (next(iter(roles)) if len(roles) == 1 else None)
    if role in _FORWARD and (side in (role, "collective", "gpu") or c.key == "WATCHDOG_TIMEOUT"):
        return _FORWARD[role]
    return NOT_ESTABLISHED if sglang else "not_applicable"


def _suspect(clues: Sequence[Clue], p: int) -> str | None:
    c = clues[p]
    if c.suspect is not None:
        return c.suspect
    if c.rank is None:
        return None
    # every rank reporting the same failure names no rank: the odd one out would
    same = {x.rank for x in clues if x.key == c.key and x.rank is not None}
    return c.rank if len(same) == 1 and not _all_ranks_fail(clues, c) else None


def _all_ranks_fail(clues: Sequence[Clue], c: Clue) -> bool:
    ranks = {x.rank for x in clues if x.rank is not None}
    return len(ranks) > 1 and all(any(x.rank == r and x.label == "cause" for x in clues)
                                  for r in ranks)


def _wedge(clues: Sequence[Clue], p: int | None) -> bool | None:
    if p is not None and clues[p].wedge is not None:
        return clues[p].wedge
    votes = {c.wedge for c in clues if c.label in ("cause", "consequence") and c.wedge is not None}
    if len(votes) == 1:
        return votes.pop()
    if p is None and any(c.label == "progress" for c in clues):
        return False
    return None


def _rivals(clues: Sequence[Clue], p: int, side: Side | None, roles: set[str]) -> list[int]:
    """Causes as strong as the primary that point at another side."""
    c = clues[p]
    return [i for i, x in enumerate(clues) if i != p and x.label == "cause"
            and x.strength == c.strength and (s := _side_of(x, roles)) is not None
            and side is not None and s != side]


def _idle_reading(clues: Sequence[Clue], roles: set[str]) -> tuple[Stage, Side]:
    """No cause: where the work is when the evidence ends (a forward stage), else nowhere."""
    side: Side = roles.copy().pop() if len(roles) == 1 else NOT_ESTABLISHED  # type: ignore[assignment]
    busy = [c for c in clues if c.label == "progress" and c.stage in ("prefill_forward",
                                                                        "decode_forward")]
    if busy and side in ("prefill", "decode") and busy[-1].stage == _FORWARD[side]:
        return busy[-1].stage or "not_applicable", side
    return "not_applicable", side


def diagnose(clues_in: Sequence[Clue]) -> Diagnosis:
    """The reading of every clue of one capture (or one set of loose files)."""
    clues = demote_consequences(list(clues_in))
    order = _order(clues)
    clues = [clues[i] for i in order]
    roles = _roles(clues)
    sglang = _sglang(clues)
    p = _primary(clues)
    decide: list[str] = []
    claims: list[Claim] = []
    if p is None:
        stage, side = _idle_reading(clues, roles)
        suspect = None
        confidence: Confidence = "medium" if clues else "low"
    else:
        c = clues[p]
        side_or_none = _side_of(c, roles)
        rivals = _rivals(clues, p, side_or_none, roles)
        side = side_or_none if side_or_none is not None and not rivals else NOT_ESTABLISHED
        stage = _stage_of(c, side_or_none, roles, sglang)
        suspect = _suspect(clues, p) if side != NOT_ESTABLISHED or c.suspect else None
        for r in rivals[:3]:
            decide.append(f"{c.key} points at {side_or_none}, {clues[r].key} at "
                          f"{_side_of(clues[r], roles)}: the earlier of the two on a shared "
                          "rid, bootstrap room or rank is upstream")
        confidence = "high" if c.strength >= 3 and not rivals else (
            "medium" if c.strength >= 2 and not rivals else "low")
        claims.append(Claim(f"upstream cause: {c.key} ({c.why})", (p,)))
    wedge = _wedge(clues, p)
    chain = link_chain(clues, p)
    head = headline_of(clues, p, stage, side, suspect, wedge)
    return Diagnosis(stage=stage, side=side, suspect=suspect, wedge=wedge,
                     root_cause=NOT_ESTABLISHED, confidence=confidence, headline=head,
                     claims=tuple(claims), chain=tuple(chain), decide=tuple(decide),
                     next_checks=tuple(checks_for(clues, p, side, stage)),
                     clues=tuple(replace(c) for c in clues))
