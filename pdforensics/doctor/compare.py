"""Readiness in `diff`: the doctor checks kept with two snapshots, as changes."""

from __future__ import annotations

from pathlib import Path

from pdforensics.diff.compare import Change
from pdforensics.diff.relevance import HIGH, MEDIUM
from pdforensics.doctor.model import Check, worse
from pdforensics.doctor.run import read_doctor

KIND = "readiness"


def _ident(c: Check) -> tuple[str, str, str]:
    return (c.host, c.key, c.subject)


def readiness_changes(a: Path, b: Path) -> list[Change]:
    """A change per check whose status moved between bundle A and B (both with doctor.json):
    worse first (high when it now fails), better at low relevance; a check new in B only
    when it fails. Empty when either bundle has no doctor checks."""
    ra, rb = read_doctor(a), read_doctor(b)
    if ra is None or rb is None:
        return []
    before = {_ident(c): c for c in ra.checks}
    out = []
    for c in rb.checks:
        old = before.get(_ident(c))
        if old is None and c.status != "fail":
            continue
        if old is not None and old.status == c.status:
            continue
        got_worse = old is None or worse(old.status, c.status)
        score = (HIGH + 5 if c.status == "fail" else MEDIUM + 5) if got_worse else 10
        key = f"{c.key} [{c.subject}]" if c.subject else c.key
        out.append(Change(scope=c.host, kind=KIND, key=key,
                          before=old.status if old is not None else None,
                          after=f"{c.status}: {c.evidence}",
                          change="added" if old is None else "changed", score=score,
                          note=(f"fix: {c.fix}" if c.fix and got_worse else None)))
    return out
