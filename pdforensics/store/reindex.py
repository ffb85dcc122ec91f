"""Rebuild a store's index from the bundles on disk (`pdforensics store reindex`).

The index is a cache of what bundles/ holds: when it is lost or corrupt, every bundle is
read again (through the same validated reader as `diff`) and filed anew. The broken index is
kept beside the new one for inspection; explicit baselines, pins and origins are carried
over from it when it can still be read, and the outcome says when they could not.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from pdforensics.bundle.ondisk import utc_stamp
from pdforensics.errors import PdforensicsError
from pdforensics.store.filing import file_into
from pdforensics.store.index import BUNDLES, INDEX, StoreError, open_index
from pdforensics.store.lock import store_lock


@dataclass(frozen=True)
class Salvage:
    """What the old index still tells (empty when it could not be read at all)."""

    baselines: tuple[tuple[str, str], ...] = ()  # (cluster, name)
    pins: tuple[tuple[str, str], ...] = ()  # (name, reason)
    origins: tuple[tuple[str, str], ...] = ()  # (name, origin)
    error: str | None = None


@dataclass(frozen=True)
class ReindexOutcome:
    store: Path
    indexed: tuple[str, ...]
    skipped: tuple[str, ...]  # "NAME: why", one per bundle directory that was not filed
    old_index: Path | None  # where the previous index was moved, if there was one
    salvage: Salvage


def salvage(path: Path) -> Salvage:
    """Baselines, pins and origins from an old index file, as far as it can be read."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            base = tuple((str(c), str(n)) for c, n in conn.execute("SELECT cluster, name FROM baselines"))
            pins = tuple((str(n), str(r)) for n, r in conn.execute("SELECT name, reason FROM pins"))
            origins = tuple((str(n), str(o)) for n, o in conn.execute("SELECT name, origin FROM snapshots"))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return Salvage(error=str(exc))
    return Salvage(base, pins, origins)


def _move_aside(store: Path) -> Path | None:
    index = store / INDEX
    if not index.exists() and not index.is_symlink():
        return None
    dest = store / f"{INDEX}.before-reindex-{utc_stamp(time.time())}"
    n = 1
    while dest.exists():
        n += 1
        dest = store / f"{INDEX}.before-reindex-{utc_stamp(time.time())}-{n}"
    os.replace(index, dest)
    for suffix in ("-journal", "-wal", "-shm"):
        side = store / f"{INDEX}{suffix}"
        if side.exists():
            os.replace(side, Path(f"{dest}{suffix}"))
    return dest


def reindex(store: str | Path) -> ReindexOutcome:
    """Move the index aside, file every bundle under bundles/ again, restore what the old
    index still says about baselines, pins and origins."""
    store = Path(store).expanduser()
    bundles = store / BUNDLES
    if not bundles.is_dir() or bundles.is_symlink():
        raise StoreError(f"no store at {store}: it has no {BUNDLES}/ directory to rebuild from")
    with store_lock(store):
        old = store / INDEX
        saved = salvage(old) if old.is_file() and not old.is_symlink() else Salvage()
        try:
            moved = _move_aside(store)
        except OSError as exc:
            raise StoreError(f"cannot move the old index of {store} aside: {exc.strerror or exc}"
                             ) from None
        indexed, skipped = [], []
        origins = dict(saved.origins)
        with open_index(store) as index:
            for d in sorted(bundles.iterdir()):
                if d.name.startswith("."):
                    continue  # a copy that never finished
                if d.is_symlink() or not d.is_dir():
                    skipped.append(f"{d.name}: not a bundle directory (a link or a file)")
                    continue
                try:
                    snap, _ = file_into(index, d, origins.get(d.name, "reindex"))
                except PdforensicsError as exc:
                    skipped.append(f"{d.name}: {exc}")
                    continue
                indexed.append(snap.name)
            for cluster, name in saved.baselines:
                if name in indexed:
                    index.set_baseline(cluster, name)
            for name, reason in saved.pins:
                if name in indexed:
                    index.pin(name, reason)
    return ReindexOutcome(store, tuple(indexed), tuple(skipped), moved, saved)


def format_reindex_text(o: ReindexOutcome) -> str:
    lines = [f"store {o.store}: {len(o.indexed)} bundle(s) indexed"
             + (f", {len(o.skipped)} skipped" if o.skipped else "")]
    if o.old_index is not None:
        lines.append(f"previous index kept as {o.old_index}")
    if o.old_index is None and o.indexed:
        lines.append("note: there was no previous index: explicit baselines and pins, if any "
                     "were set, are not known; set them again with `pdforensics baseline set`")
    if o.salvage.error:
        lines.append(f"note: the previous index could not be read ({o.salvage.error}): explicit "
                     "baselines and pins are lost; set them again with `pdforensics baseline set`")
    lines.extend(f"  skipped {s}" for s in o.skipped)
    return "\n".join(lines) + "\n"
