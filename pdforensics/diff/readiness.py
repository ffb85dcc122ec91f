"""Readiness in `diff`: doctor's checks kept with two snapshots (`snapshot --doctor`), as
changes of kind "readiness": worse first (high when a check now fails), better at low."""

from __future__ import annotations

from pathlib import Path

from pdforensics.diff.relevance import HIGH, MEDIUM
from pdforensics.doctor.stored import readiness_moves

KIND = "readiness"


def readiness_rows(a: Path, b: Path) -> list[dict[str, object]]:
    """Keyword arguments of one Change per check that moved between bundle A and B."""
    rows: list[dict[str, object]] = []
    for m in readiness_moves(a, b):
        c = m.check
        score = (HIGH + 5 if c.status == "fail" else MEDIUM + 5) if m.worse else 10
        rows.append({"scope": c.host, "kind": KIND,
                     "key": f"{c.key} [{c.subject}]" if c.subject else c.key,
                     "before": m.before, "after": f"{c.status}: {c.evidence}",
                     "change": "added" if m.before is None else "changed", "score": score,
                     "note": f"fix: {c.fix}" if c.fix and m.worse else None})
    return rows
