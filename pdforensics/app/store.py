"""The store's workflows the commands call: the baseline (set, show, clear), `diff` between
two references, the `timeline` of an incident, `store reindex`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pdforensics.model import ClusterSpec

if TYPE_CHECKING:
    from pdforensics.diff.compare import DiffResult
    from pdforensics.store.index import Snapshot
    from pdforensics.store.refs import Baseline
    from pdforensics.store.reindex import ReindexOutcome
    from pdforensics.store.timeline import Timeline


@dataclass(frozen=True)
class StoreAt:
    """Which store and which cluster in it: the cluster file (its `store` and name; None: no
    file is configured), --store, --name."""

    cluster_file: str | None = None
    store: str | None = None
    cluster_name: str | None = None

    def cluster(self) -> ClusterSpec | None:
        from pdforensics.config.cluster import load_cluster_file

        return load_cluster_file(self.cluster_file) if self.cluster_file else None

    def store_dir(self, cluster: ClusterSpec | None) -> Path:
        from pdforensics.store.paths import store_for

        return store_for(cluster, self.store)

    def name(self, cluster: ClusterSpec | None) -> str | None:
        return self.cluster_name or (cluster.name if cluster is not None else None)


def set_baseline(at: StoreAt, ref: str) -> Snapshot:
    """Make REF (a bundle path, filed first when outside the store, or a snapshot name) its
    cluster's baseline."""
    from pdforensics.store.filing import file_into
    from pdforensics.store.index import open_index
    from pdforensics.store.refs import is_bundle, resolve

    cluster = at.cluster()
    with open_index(at.store_dir(cluster)) as index:
        if is_bundle(ref):
            snap, _ = file_into(index, Path(ref), "import")
        else:
            found = index.get(Path(resolve(index, ref, at.name(cluster))).name)
            assert found is not None
            snap = found
        index.set_baseline(snap.cluster, snap.name)
    return snap


def show_baseline(at: StoreAt) -> tuple[str, Baseline | None]:
    """The cluster's name in the store and its baseline (set, or the newest HEALTHY snapshot)."""
    from pdforensics.store.index import open_index
    from pdforensics.store.refs import baseline_for, pick_cluster

    cluster = at.cluster()
    with open_index(at.store_dir(cluster), create=False) as index:
        name = pick_cluster(index, at.name(cluster))
        return name, baseline_for(index, name)


def clear_baseline(at: StoreAt) -> tuple[str, bool]:
    """Forget the cluster's explicit baseline; whether there was one."""
    from pdforensics.store.index import open_index
    from pdforensics.store.refs import pick_cluster

    cluster = at.cluster()
    with open_index(at.store_dir(cluster), create=False) as index:
        name = pick_cluster(index, at.name(cluster))
        return name, index.clear_baseline(name)


def diff_refs(at: StoreAt, a: str | None, b: str | None) -> DiffResult:
    """What changed from A to B (bundle paths, snapshot names, `baseline`, `newest`). No
    reference: baseline -> newest; one: baseline -> it."""
    from pdforensics.diff import diff_bundles
    from pdforensics.store.index import open_index
    from pdforensics.store.refs import bundle_cluster, is_bundle, resolve

    cluster = at.cluster()
    if b is None:
        a, b = "baseline", a or "newest"
    assert a is not None
    name = at.name(cluster)
    if is_bundle(a) and is_bundle(b):
        pa, pb = resolve(None, a, name), resolve(None, b, name)
    else:
        with open_index(at.store_dir(cluster), create=False) as index:
            pb = resolve(index, b, name)
            pa = resolve(index, a, name or bundle_cluster(pb))
    result = diff_bundles(pa, pb)
    if pa == pb:
        result = dataclasses.replace(result, notes=("A and B are the same bundle", *result.notes))
    return result


def timeline_of(at: StoreAt) -> Timeline:
    """The cluster's last HEALTHY and first not-healthy snapshot and the changes between them."""
    from pdforensics.store.index import open_index
    from pdforensics.store.refs import pick_cluster
    from pdforensics.store.timeline import build_timeline

    cluster = at.cluster()
    with open_index(at.store_dir(cluster), create=False) as index:
        return build_timeline(index, pick_cluster(index, at.name(cluster)))


def reindex_store(at: StoreAt) -> ReindexOutcome:
    """Rebuild the store's index from the bundles on disk."""
    from pdforensics.store.reindex import reindex

    return reindex(at.store_dir(at.cluster()))
