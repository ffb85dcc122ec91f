"""File a finished bundle into a store: copy it under bundles/, index it with its verdict."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.errors import BundleError, PdforensicsError
from pdforensics.model import ClusterSpec
from pdforensics.store.index import Index, Snapshot, StoreError, open_index
from pdforensics.untrusted.read import tree_problems

VERDICTS = ("HEALTHY", "DEGRADED", "WEDGED", "OUTAGE", "UNKNOWN")
STORE_ENV = "PDFORENSICS_STORE"


@dataclass(frozen=True)
class Verdict:
    """What the bundle's analysis says; `verdict` None with `why` when there is none."""

    verdict: str | None
    summary: str | None
    why: str | None


def verdict_for(bundle: Path) -> Verdict:
    """The bundle's analysis.json, else a fresh analysis (which writes analysis.json).
    BundleError when analysis.json is refused or malformed: a crafted bundle is not filed."""
    from pdforensics.analysis.engine import analyze_path
    from pdforensics.analysis.result_json import read_analysis

    analysis = read_analysis(bundle)  # a refused or malformed analysis.json refuses the bundle
    if analysis is None:
        try:
            analysis = analyze_path(bundle)
        except Exception as exc:  # an analysis bug must not lose the snapshot
            return Verdict(None, None, f"analysis failed: {type(exc).__name__}: {exc}")
    return Verdict(analysis.verdict, analysis.summary or None, None)


def configured_store(cluster: ClusterSpec | None) -> Path | None:
    """The store `capture` files into: $PDFORENSICS_STORE, else the cluster file's `store`."""
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    if cluster is not None and cluster.store:
        return Path(cluster.store).expanduser().resolve()
    return None


@dataclass(frozen=True)
class Filing:
    """Where a bundle was filed: the store, and its snapshot or the error that stopped it."""

    store: Path
    snapshot: Snapshot | None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        if self.snapshot is None:
            return {"store": str(self.store), "error": self.error}
        return {"store": str(self.store), "name": self.snapshot.name,
                "path": str(self.snapshot.path), "verdict": self.snapshot.verdict}


def file_if_configured(cluster: ClusterSpec | None, bundle: Path,
                       origin: str = "capture") -> Filing | None:
    """File the bundle when a store is configured; a store failure is reported in the
    Filing, never raised (the capture itself succeeded)."""
    store = configured_store(cluster)
    return None if store is None else file_safely(store, bundle, origin)


def file_safely(store: Path, bundle: Path, origin: str) -> Filing:
    """file_capture, with a store failure returned instead of raised."""
    try:
        return Filing(store, file_capture(store, bundle, origin))
    except PdforensicsError as exc:
        return Filing(store, None, str(exc))


def file_capture(store: str | Path, bundle: str | Path, origin: str = "capture") -> Snapshot:
    """Copy a bundle into the store (unless it is already there) and index it."""
    with open_index(store) as index:
        return file_into(index, Path(bundle), origin)[0]


def file_into(index: Index, bundle: Path, origin: str) -> tuple[Snapshot, Verdict]:
    """file_capture on an open index; also returns the verdict (with why, when none)."""
    from pdforensics.diff.compare import shipped_catalog
    from pdforensics.diff.state import NOT_CONFIG, extract_state, host_fingerprint
    from pdforensics.views.loaded import load_capture

    bundle = bundle.resolve()
    if not (bundle / "manifest.json").is_file():
        raise BundleError(f"{bundle}: no manifest.json; not a finished pdforensics bundle")
    known = index.get(bundle.name)
    if known is not None and known.path.resolve() == bundle:
        return known, Verdict(known.verdict, None, None)
    target = bundle
    if bundle.parent != index.bundles.resolve():
        target = _copy_in(bundle, index.bundles)
    capture = load_capture(target, skip_sources=NOT_CONFIG)
    verdict = verdict_for(target)
    try:
        state = extract_state(capture, shipped_catalog())
        prints = {h.name: host_fingerprint(h) for h in state.hosts}
    except PdforensicsError:
        prints = {}
    snap = index.add(name=target.name, cluster=capture.cluster, taken_at=capture.started_at,
                     verdict=verdict.verdict, status=capture.status, origin=origin,
                     hosts=[h.name for h in capture.hosts], fingerprints=prints)
    return snap, verdict


def _copy_in(bundle: Path, dest_dir: Path) -> Path:
    dest, n = dest_dir / bundle.name, 1
    while dest.exists():
        n += 1
        dest = dest_dir / f"{bundle.name}-{n}"
    refused = tree_problems(bundle)
    if refused:  # a link or special file would copy what lies outside the bundle
        raise BundleError(f"{bundle}: not filed: {refused[0]}"
                          + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""))
    tmp = dest_dir / f".{dest.name}.{os.getpid()}.tmp"
    try:
        shutil.copytree(bundle, tmp, symlinks=True)
        os.rename(tmp, dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"cannot copy {bundle} into the store: {exc}") from None
    return dest
