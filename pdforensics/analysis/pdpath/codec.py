"""Diagnosis <-> JSON (analysis.json's ``diagnosis``, ``--json``). Reading trusts nothing:
the bundle schema (bundle/schema.py DIAGNOSIS) has checked the shape; here every value is
checked against the model's vocabulary, and an index that points nowhere is refused."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast, get_args

from pdforensics.analysis.pdpath.model import (
    Claim,
    Clue,
    Confidence,
    Diagnosis,
    Label,
    Link,
    Side,
    Stage,
)
from pdforensics.errors import BundleError


def diagnosis_json(d: Diagnosis) -> dict[str, Any]:
    doc = asdict(d)
    doc["clues"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in c.items()}
                    for c in doc["clues"]]
    doc["claims"] = [{"text": c["text"], "clues": list(c["clues"])} for c in doc["claims"]]
    doc["decide"], doc["next_checks"] = list(d.decide), list(d.next_checks)
    doc["notes"] = list(d.notes)
    doc["chain"] = [dict(x) for x in doc["chain"]]
    return doc


def _one_of(value: Any, allowed: tuple[str, ...], what: str, where: str) -> Any:
    if value is not None and value not in allowed:
        raise BundleError(f"{where}: unknown {what} {str(value)[:40]!r}")
    return value


def _clue(doc: dict[str, Any], where: str) -> Clue:
    return Clue(
        key=doc["key"], label=cast(Label, _one_of(doc["label"], get_args(Label), "label", where)),
        text=doc["text"], source=doc.get("source") or "", line=doc.get("line"),
        time=doc.get("time"),
        stage=cast(Stage | None, _one_of(doc.get("stage"), get_args(Stage), "stage", where)),
        side=cast(Side | None, _one_of(doc.get("side"), get_args(Side), "side", where)),
        role=doc.get("role"), host=doc.get("host"), rank=doc.get("rank"),
        rids=tuple(doc.get("rids") or ()), rooms=tuple(doc.get("rooms") or ()),
        suspect=doc.get("suspect"), wedge=doc.get("wedge"), strength=int(doc.get("strength", 1)),
        why=doc.get("why") or "")


def diagnosis_from_json(doc: dict[str, Any], where: str) -> Diagnosis:
    """The typed diagnosis of an already shape-checked document."""
    clues = tuple(_clue(c, f"{where} clue {i}") for i, c in enumerate(doc.get("clues") or ()))

    def idx(i: int) -> int:
        if not 0 <= i < len(clues):
            raise BundleError(f"{where}: clue index {i} points nowhere")
        return i

    return Diagnosis(
        stage=cast(Stage, _one_of(doc["stage"], get_args(Stage), "stage", where)),
        side=cast(Side, _one_of(doc["side"], get_args(Side), "side", where)),
        suspect=doc.get("suspect"), wedge=doc.get("wedge"), root_cause=doc["root_cause"],
        confidence=cast(Confidence, _one_of(doc["confidence"], get_args(Confidence),
                                            "confidence", where)),
        headline=doc["headline"],
        claims=tuple(Claim(c["text"], tuple(idx(i) for i in c.get("clues") or ()))
                     for c in doc.get("claims") or ()),
        chain=tuple(Link(idx(x["cause"]), idx(x["consequence"]), x.get("why") or "")
                    for x in doc.get("chain") or ()),
        decide=tuple(doc.get("decide") or ()), next_checks=tuple(doc.get("next_checks") or ()),
        clues=clues, notes=tuple(doc.get("notes") or ()))
