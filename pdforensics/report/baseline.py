"""What changed since the baseline: an explicit earlier bundle, else the store's baseline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdforensics.diff.compare import Change
from pdforensics.report.changes import Baseline


@dataclass(frozen=True)
class BaselineChanges:
    """The changes for the report's section; ``changes`` None when there is no baseline."""

    changes: list[Change] | None = None
    baseline: Baseline | None = None
    notes: tuple[str, ...] = ()


def changes_since(bundle: Path, baseline: Path | None = None) -> BaselineChanges:
    """Changes from BASELINE (given) or from the configured store's baseline to BUNDLE."""
    if baseline is not None:
        from pdforensics.diff import diff_bundles

        result = diff_bundles(baseline, bundle)
        return BaselineChanges(list(result.changes),
                               Baseline(baseline.resolve().name, result.a_taken_at or None),
                               result.notes)
    try:
        from pdforensics.store import baseline_diff

        found = baseline_diff(bundle)
    except Exception:  # a store problem costs the section, never the report
        return BaselineChanges()
    if found is None:
        return BaselineChanges()
    how = "set as the baseline" if found.explicit else "the newest HEALTHY snapshot in the store"
    return BaselineChanges(list(found.result.changes),
                           Baseline(f"{found.baseline.name} ({how})", found.baseline.taken_at),
                           found.result.notes)
