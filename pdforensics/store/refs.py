"""Baselines and the names `diff`/`baseline` accept: a bundle path, a snapshot name,
`baseline`, or `newest`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdforensics.errors import BundleError
from pdforensics.store.index import Index, Snapshot, StoreError

KEYWORDS = ("baseline", "newest", "latest")


@dataclass(frozen=True)
class Baseline:
    snapshot: Snapshot
    explicit: bool  # set with `baseline set`, else the newest HEALTHY snapshot


def baseline_for(index: Index, cluster: str) -> Baseline | None:
    """The explicit baseline, else the newest HEALTHY snapshot, else None."""
    snap = index.explicit_baseline(cluster)
    if snap is not None:
        return Baseline(snap, True)
    healthy = [s for s in index.snapshots(cluster) if s.healthy]
    return Baseline(healthy[-1], False) if healthy else None


def pick_cluster(index: Index, wanted: str | None) -> str:
    """The cluster a store command is about: the one asked for, else the newest snapshot's."""
    clusters = index.clusters()
    if wanted is not None:
        if wanted not in clusters:
            known = ", ".join(clusters) or "none"
            raise StoreError(f"store {index.store} has no snapshot of cluster {wanted!r} "
                             f"(clusters: {known})")
        return wanted
    if not clusters:
        raise StoreError(f"store {index.store} holds no snapshots yet")
    return clusters[0]


def bundle_cluster(path: Path) -> str:
    """The cluster name in a bundle's manifest."""
    from pdforensics.bundle.ondisk import load_bundle

    return str(load_bundle(path).manifest.get("cluster", ""))


def is_bundle(ref: str) -> bool:
    p = Path(ref).expanduser()
    return p.is_dir() and ((p / "manifest.json").is_file() or (p / "results.jsonl").is_file())


def resolve(index: Index | None, ref: str, cluster: str | None) -> Path:
    """A ref -> bundle directory. Paths win over snapshot names."""
    if is_bundle(ref):
        return Path(ref).expanduser().resolve()
    if index is None:
        raise BundleError(f"{ref}: not a bundle directory (and no store to look it up in)")
    if ref in KEYWORDS:
        name = pick_cluster(index, cluster)
        if ref == "baseline":
            base = baseline_for(index, name)
            if base is None:
                raise StoreError(f"cluster {name!r} has no baseline: no HEALTHY snapshot yet "
                                 "and none set with `pdforensics baseline set`")
            return base.snapshot.path
        newest = index.newest(name)
        assert newest is not None  # pick_cluster found a snapshot of it
        return newest.path
    snap = index.get(ref) or index.get(Path(ref).name)
    if snap is None:
        raise BundleError(f"{ref}: neither a bundle directory nor a snapshot in {index.store}")
    return snap.path
