"""Changes since the baseline, for the report's "Changes since baseline" section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdforensics.errors import PdforensicsError
from pdforensics.store.index import open_index
from pdforensics.store.refs import baseline_for, bundle_cluster


def changes_since_baseline(bundle: str | Path, store: str | Path) -> list[dict[str, Any]] | None:
    """The diff rows baseline -> bundle, [] when it is the baseline, None when there is no
    store or no baseline for the bundle's cluster (the report then says so)."""
    from pdforensics.diff import changes_for_report, diff_bundles

    bundle = Path(bundle).resolve()
    try:
        with open_index(store, create=False) as index:
            base = baseline_for(index, bundle_cluster(bundle))
    except PdforensicsError:
        return None
    if base is None:
        return None
    if base.snapshot.path.resolve() == bundle:
        return []
    return changes_for_report(diff_bundles(base.snapshot.path, bundle))
