"""The field corpus for tests: every artifact with its sidecar, and the known gaps.

tests/data/field/known_gaps.json lists, per artifact, the sidecar keys the readers do not
meet yet (``{"family/slug.ext": {"key": "why"}}``). Tests that walk the corpus mark exactly
those checks as strict xfails: a gap that closes fails the suite until it is struck from the
file, and a check that breaks and is not listed fails as usual. Nothing is skipped silently:
`benchmarks/bench_accuracy.py` prints every miss and the floor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
GAPS_FILE = FIELD / "known_gaps.json"


def field_text(rel: str) -> str:
    """The text of the field artifact at ``rel`` (``family/slug.ext``)."""
    return (FIELD / rel).read_text()


@dataclass(frozen=True)
class Case:
    path: Path  # the artifact
    meta: dict[str, Any]  # its sidecar
    meta_path: Path

    @property
    def rel(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def expect(self) -> dict[str, Any]:
        e = self.meta.get("expect") or {}
        assert isinstance(e, dict)
        return e


def cases(kinds: tuple[str, ...] | None = None, families: tuple[str, ...] | None = None
          ) -> list[Case]:
    """Every artifact of the corpus (sorted), optionally of these sidecar kinds / families."""
    out = []
    for meta in sorted(FIELD.glob("*/*.meta.json")):
        if families is not None and meta.parent.name not in families:
            continue
        side = json.loads(meta.read_text(encoding="utf-8"))
        if kinds is not None and side.get("kind") not in kinds:
            continue
        slug = meta.name[: -len(".meta.json")]
        art = next(p for p in sorted(meta.parent.glob(slug + ".*"))
                   if not p.name.endswith(".meta.json"))
        out.append(Case(art, side, meta))
    return out


def known_gaps() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(GAPS_FILE.read_text(encoding="utf-8"))
    return data


def gap(case: Case, *keys: str) -> str | None:
    """Why one of ``keys`` is a known gap of this artifact, or None."""
    g = known_gaps().get(case.rel, {})
    return next((f"{k}: {g[k]}" for k in keys if k in g), None)


def params(items: list[Case], *keys: str) -> list[Any]:
    """pytest params, one per artifact; a strict xfail where one of ``keys`` is a known gap."""
    out = []
    for c in items:
        why = gap(c, *keys)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        out.append(pytest.param(c, id=c.rel, marks=marks))
    return out
