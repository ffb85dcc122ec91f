"""The snapshot store: bundles on disk plus an SQLite index, baselines, retention, timeline.

Layout: `<store>/index.sqlite`, `<store>/bundles/<cluster>-<UTC>/`, `<store>/.lock`.
"""

from __future__ import annotations

from pdforensics.store.changes import BaselineDiff, baseline_diff
from pdforensics.store.filing import configured_store, file_capture, file_if_configured
from pdforensics.store.index import Index, Snapshot, StoreError, open_index
from pdforensics.store.paths import default_store, store_for

__all__ = [
    "BaselineDiff", "Index", "Snapshot", "StoreError", "baseline_diff", "configured_store",
    "default_store", "file_capture", "file_if_configured", "open_index", "store_for",
]
