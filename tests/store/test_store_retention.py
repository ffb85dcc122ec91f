"""Retention: last N + one per day for D days; baselines and timeline references never go."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.errors import ConfigError
from pdforensics.store.index import Snapshot, open_index
from pdforensics.store.retention import RetentionPolicy, plan_prune, protected_names, prune
from pdforensics.store.timeline import build_timeline
from tests.support.store import T0, add

DAY = 86400.0


def snap(i: int, at: float, verdict: str | None = "HEALTHY") -> Snapshot:
    return Snapshot(id=i, name=f"s{i}", path=Path(f"/x/s{i}"), cluster="c", taken_at=at,
                    verdict=verdict, status="complete", origin="snapshot", hosts=(),
                    fingerprints={})


def test_keeps_last_n_and_one_per_day() -> None:
    # four a day for five days, newest last; the second of each day is the only HEALTHY one
    snaps = [snap(d * 4 + k, T0 + d * DAY + k * 3600, "HEALTHY" if k == 1 else "WEDGED")
             for d in range(5) for k in range(4)]
    now = T0 + 4 * DAY + 4 * 3600
    gone = {s.name for s in plan_prune(snaps, RetentionPolicy(keep_last=3, keep_days=3), (), now)}
    kept = {s.name for s in snaps} - gone
    # the newest three, plus the HEALTHY one of each of the last three days
    assert kept == {"s19", "s18", "s17", "s13", "s9"}
    assert "s1" in gone and "s5" in gone  # days 0 and 1 are past keep_days


def test_day_without_healthy_keeps_its_newest() -> None:
    snaps = [snap(1, T0, "WEDGED"), snap(2, T0 + 60, "DEGRADED"), snap(3, T0 + 2 * DAY)]
    gone = plan_prune(snaps, RetentionPolicy(keep_last=1, keep_days=5), (), T0 + 2 * DAY)
    assert [s.name for s in gone] == ["s1"]


def test_protected_are_kept_whatever_their_age() -> None:
    snaps = [snap(i, T0 + i * DAY) for i in range(10)]
    gone = plan_prune(snaps, RetentionPolicy(keep_last=0, keep_days=0), {"s0", "s4"}, T0 + 9 * DAY)
    assert {s.name for s in gone} == {f"s{i}" for i in range(10)} - {"s0", "s4"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 40 * DAY), st.sampled_from(["HEALTHY", "WEDGED", None])),
                max_size=40),
       st.integers(0, 10), st.integers(0, 10), st.sets(st.integers(0, 39), max_size=8))
def test_prune_never_touches_protected_or_newest(items, keep_last, keep_days, protect) -> None:
    snaps = [snap(i, T0 + t, v) for i, (t, v) in enumerate(items)]
    protected = {f"s{i}" for i in protect}
    gone = plan_prune(snaps, RetentionPolicy(keep_last, keep_days), protected, T0 + 40 * DAY)
    names = {s.name for s in gone}
    assert not names & protected
    newest = sorted(snaps, key=lambda s: (s.taken_at, s.id), reverse=True)[:keep_last]
    assert not names & {s.name for s in newest}
    assert names <= {s.name for s in snaps}


def test_store_prune_never_deletes_a_baseline(tmp_path: Path) -> None:
    old = add(tmp_path, T0 - 60 * DAY, "HEALTHY", name="old-baseline")
    for i in range(6):
        add(tmp_path, T0 + i * 3600, "HEALTHY" if i < 5 else "WEDGED", name=f"s{i}")
    with open_index(tmp_path) as index:
        index.set_baseline("synth", "old-baseline")
        gone = prune(index, RetentionPolicy(keep_last=0, keep_days=0), now=T0 + 400 * DAY)
        left = {s.name for s in index.snapshots("synth")}
        # the explicit baseline, the newest HEALTHY (default baseline), the incident's frame
        assert left == {"old-baseline", "s4", "s5"}
        assert {s.name for s in gone} == {"s0", "s1", "s2", "s3"}
        assert old.path.is_dir()
        for s in gone:
            assert not s.path.exists()
        assert sorted(p.name for p in index.bundles.iterdir()) == sorted(left)


def test_store_prune_keeps_timeline_pins(tmp_path: Path) -> None:
    add(tmp_path, T0, "HEALTHY", name="a")
    add(tmp_path, T0 + 3600, "HEALTHY", flags=("--log-level", "debug"), name="b")
    add(tmp_path, T0 + 7200, "WEDGED", flags=("--log-level", "debug"), name="c")
    with open_index(tmp_path) as index:
        build_timeline(index, "synth")  # pins a, b (first seen + last healthy), c
        for i in range(3):  # the cluster recovers: a later incident frames other snapshots
            add(tmp_path, T0 + 10000 + i * 3600, "HEALTHY", name=f"r{i}")
        add(tmp_path, T0 + 30000, "DEGRADED", name="d")
        protected = protected_names(index, "synth")
        assert {"a", "b", "c"} <= protected
        prune(index, RetentionPolicy(keep_last=0, keep_days=0), now=T0 + 100 * DAY)
        assert {"a", "b", "c"} <= {s.name for s in index.snapshots("synth")}


def test_policy_from_cluster_file_settings() -> None:
    assert RetentionPolicy.from_settings(None, None, {"keep_last": 5, "keep_days": 2}) == \
        RetentionPolicy(5, 2)
    assert RetentionPolicy.from_settings(7, None, {"keep_last": 5}).keep_last == 7
    with pytest.raises(ConfigError):
        RetentionPolicy.from_settings(None, None, {"keep_days": "ten"})
