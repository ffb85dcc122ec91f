"""Retention: keep the last N snapshots and one per day for D days; never a protected one.

Protected: every explicit baseline, the default baseline (newest HEALTHY), the snapshots
that frame the current incident (see incident.py), and every snapshot pinned by a
`timeline` run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pdforensics.errors import ConfigError
from pdforensics.store.incident import find_incident
from pdforensics.store.index import Index, Snapshot, StoreError

DEFAULT_KEEP_LAST = 96  # a day of 15-minute snapshots
DEFAULT_KEEP_DAYS = 30


@dataclass(frozen=True)
class RetentionPolicy:
    keep_last: int = DEFAULT_KEEP_LAST
    keep_days: int = DEFAULT_KEEP_DAYS

    @classmethod
    def from_settings(cls, keep_last: int | None, keep_days: int | None,
                      extra: dict[str, Any] | None = None) -> RetentionPolicy:
        """Options win over the cluster file's `[cluster] keep_last / keep_days`."""
        extra = extra or {}
        last = keep_last if keep_last is not None else extra.get("keep_last", DEFAULT_KEEP_LAST)
        days = keep_days if keep_days is not None else extra.get("keep_days", DEFAULT_KEEP_DAYS)
        for name, v in (("keep_last", last), ("keep_days", days)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{name} must be a whole number >= 0, not {v!r}")
        return cls(keep_last=last, keep_days=days)


def _day(t: float) -> int:
    return datetime.fromtimestamp(t, timezone.utc).date().toordinal()


def plan_prune(snaps: Sequence[Snapshot], policy: RetentionPolicy, protected: Iterable[str],
               now: float) -> list[Snapshot]:
    """The snapshots of one cluster (any order) that retention deletes. Pure.

    Kept: the newest `keep_last`; per UTC day of the last `keep_days` (today included),
    the newest HEALTHY snapshot of that day, else its newest; everything protected.
    """
    keep = set(protected)
    newest_first = sorted(snaps, key=lambda s: (s.taken_at, s.id), reverse=True)
    keep.update(s.name for s in newest_first[:policy.keep_last])
    today = _day(now)
    per_day: dict[int, list[Snapshot]] = {}
    for s in newest_first:
        d = _day(s.taken_at)
        if today - d < policy.keep_days:
            per_day.setdefault(d, []).append(s)
    for day_snaps in per_day.values():
        pick = next((s for s in day_snaps if s.healthy), day_snaps[0])
        keep.add(pick.name)
    return [s for s in newest_first if s.name not in keep]


def protected_names(index: Index, cluster: str) -> set[str]:
    """Names retention must never delete for this cluster."""
    snaps = index.snapshots(cluster)
    out = set(index.baseline_names()) | set(index.pinned())
    healthy = [s for s in snaps if s.healthy]
    if healthy:
        out.add(healthy[-1].name)
    out |= find_incident(snaps, index.explicit_baseline(cluster)).names
    return out


def prune(index: Index, policy: RetentionPolicy, now: float, cluster: str | None = None,
          dry_run: bool = False) -> list[Snapshot]:
    """Apply the policy to one cluster (or every cluster) of the store; returns what went."""
    gone: list[Snapshot] = []
    for name in ([cluster] if cluster else index.clusters()):
        doomed = plan_prune(index.snapshots(name), policy, protected_names(index, name), now)
        for snap in doomed:
            if not dry_run:
                _delete(index, snap)
            gone.append(snap)
    return gone


def _delete(index: Index, snap: Snapshot) -> None:
    """Move the bundle aside, drop its row, then delete its files (never a half bundle indexed)."""
    path = snap.path
    trash = path.with_name(f".deleting.{path.name}.{os.getpid()}")
    try:
        if path.exists():
            os.rename(path, trash)
    except OSError as exc:
        raise StoreError(f"cannot remove {path}: {exc.strerror or exc}") from None
    index.delete(snap.name)
    shutil.rmtree(trash, ignore_errors=True)
    archive = path.with_name(path.name + ".tar.gz")
    if archive.exists():
        archive.unlink()
