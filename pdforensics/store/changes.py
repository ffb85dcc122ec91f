"""The diff from the store's baseline to a bundle, for the report's "Changes since baseline"."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdforensics.diff.compare import DiffResult
from pdforensics.errors import PdforensicsError
from pdforensics.store.filing import configured_store
from pdforensics.store.index import Snapshot, open_index
from pdforensics.store.refs import baseline_for, bundle_cluster


@dataclass(frozen=True)
class BaselineDiff:
    baseline: Snapshot
    explicit: bool  # set with `baseline set`, else the newest HEALTHY snapshot
    result: DiffResult  # no changes when the bundle is the baseline itself


def baseline_diff(bundle: str | Path, store: str | Path | None = None) -> BaselineDiff | None:
    """Baseline -> bundle, or None when no store is configured (or given) or its cluster has
    no baseline yet. Never raises for a missing or unreadable store: a report still renders."""
    from pdforensics.diff import diff_bundles

    where = Path(store) if store is not None else configured_store(None)
    if where is None:
        return None
    bundle = Path(bundle).resolve()
    try:
        with open_index(where, create=False) as index:
            base = baseline_for(index, bundle_cluster(bundle))
    except PdforensicsError:
        return None
    if base is None:
        return None
    return BaselineDiff(base.snapshot, base.explicit, diff_bundles(base.snapshot.path, bundle))
