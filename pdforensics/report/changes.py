"""Changes since baseline: the semantic diff's Change objects as report rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdforensics.diff.compare import Change
from pdforensics.report.common import utc

_ORDER = {"high": 0, "medium": 1, "low": 2}
MAX_VALUE = 400


@dataclass(frozen=True)
class Baseline:
    """Which capture the changes are measured against (shown in the section and timeline)."""

    name: str
    taken_at: float | None = None


@dataclass(frozen=True)
class ChangeRow:
    relevance: str
    scope: str
    kind: str
    key: str
    before: str
    after: str
    note: str


@dataclass(frozen=True)
class ChangesView:
    baseline: str
    rows: tuple[ChangeRow, ...]
    notes: tuple[str, ...]


def show(value: object) -> str:
    """A before/after value: absent, a bare switch, or the text (clipped)."""
    if value is None:
        return "(absent)"
    if value is True:
        return "(set)"
    text = str(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _row(c: Change) -> ChangeRow:
    bits = [c.change]
    if c.default is not None:
        bits.append(f"sglang default {c.default!r}")
    if c.note:
        bits.append(c.note)
    if c.help:
        bits.append(c.help[:200])
    return ChangeRow(relevance=c.relevance, scope=c.scope, kind=c.kind, key=c.key,
                     before=show(c.before), after=show(c.after), note="; ".join(bits))


def build_changes(changes: Sequence[Change] | None, baseline: Baseline | None,
                  notes: Sequence[str] = ()) -> tuple[ChangesView | None, list[str]]:
    """None: no baseline configured (said as missing); an empty list: nothing changed."""
    if changes is None:
        return None, ["no baseline configured: re-render with `pdforensics report BUNDLE "
                      "--baseline EARLIER_BUNDLE` to see what changed since the cluster last "
                      "worked"]
    rows = sorted((_row(c) for c in changes), key=lambda r: (_ORDER.get(r.relevance, 3), r.scope,
                                                              r.kind, r.key))
    label = "(unnamed baseline)"
    if baseline is not None:
        label = baseline.name + (f", taken {utc(baseline.taken_at)}" if baseline.taken_at else "")
    return ChangesView(baseline=label, rows=tuple(rows), notes=tuple(notes)), []
