"""timeline over synthetic snapshots: suspects ranked, dated, pinned; incident framing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.store.incident import find_incident
from pdforensics.store.index import Snapshot, open_index
from pdforensics.store.timeline import build_timeline, timeline_json
from tests.support.store import T0, add

LOG = ("--log-level", "debug")
ENV = (("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "512"),)
HOUR = 3600.0


def name(snap: Snapshot | None) -> str | None:
    """The snapshot's name; None when there is none (so an assert on the name says so)."""
    return None if snap is None else snap.name


def day(store: Path) -> list[Snapshot]:
    """Morning healthy, a log-level change at noon (still healthy), an env var and the wedge."""
    return [
        add(store, T0, "HEALTHY", name="s1"),
        add(store, T0 + 2 * HOUR, "HEALTHY", name="s2"),
        add(store, T0 + 4 * HOUR, "HEALTHY", flags=LOG, name="s3"),
        add(store, T0 + 6 * HOUR, "HEALTHY", flags=LOG, name="s4"),
        add(store, T0 + 8 * HOUR, "WEDGED", flags=LOG, env=ENV, name="s5"),
        add(store, T0 + 9 * HOUR, "WEDGED", flags=LOG, env=ENV, name="s6"),
    ]


def test_env_var_first_log_level_below(tmp_path: Path) -> None:
    day(tmp_path)
    with open_index(tmp_path) as index:
        t = build_timeline(index, "synth")
    assert name(t.incident.last_healthy) == "s4"
    assert name(t.incident.first_unhealthy) == "s5"
    assert name(t.incident.since) == "s1"  # start of the healthy run
    keys = [s.change.key for s in t.suspects]
    assert keys == ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "--log-level"]
    env, log = t.suspects
    assert env.first_seen.name == "s5" and not env.seen_healthy
    assert log.first_seen.name == "s3" and log.seen_healthy
    assert (env.change.before, env.change.after) == (None, "512")


def test_unreachable_snapshot_in_between_does_not_move_first_seen(tmp_path: Path) -> None:
    add(tmp_path, T0, "HEALTHY", name="s1")
    add(tmp_path, T0 + HOUR, "HEALTHY", flags=LOG, name="s2")
    add(tmp_path, T0 + 2 * HOUR, "HEALTHY", flags=LOG, decode_reachable=False, name="s3")
    add(tmp_path, T0 + 3 * HOUR, "WEDGED", flags=LOG, env=ENV, name="s4")
    with open_index(tmp_path) as index:
        t = build_timeline(index, "synth")
    log = next(s for s in t.suspects if s.change.key == "--log-level")
    assert log.first_seen.name == "s2"


def test_change_reverted_and_reapplied_dates_from_the_last_time(tmp_path: Path) -> None:
    add(tmp_path, T0, "HEALTHY", name="s1")
    add(tmp_path, T0 + HOUR, "HEALTHY", flags=LOG, name="s2")
    add(tmp_path, T0 + 2 * HOUR, "HEALTHY", name="s3")
    add(tmp_path, T0 + 3 * HOUR, "HEALTHY", flags=LOG, name="s4")
    add(tmp_path, T0 + 4 * HOUR, "DEGRADED", flags=LOG, name="s5")
    with open_index(tmp_path) as index:
        t = build_timeline(index, "synth")
    (log,) = t.suspects
    assert log.first_seen.name == "s4" and log.seen_healthy


def test_explicit_baseline_widens_the_window(tmp_path: Path) -> None:
    day(tmp_path)
    add(tmp_path, T0 - 4 * HOUR, "DEGRADED", name="s0")  # an older incident
    with open_index(tmp_path) as index:
        index.set_baseline("synth", "s4")
        t = build_timeline(index, "synth")
        assert name(t.incident.since) == "s4"
        assert [s.change.key for s in t.suspects] == ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES"]


def test_referenced_snapshots_are_pinned(tmp_path: Path) -> None:
    day(tmp_path)
    with open_index(tmp_path) as index:
        build_timeline(index, "synth")
        assert set(index.pinned()) == {"s1", "s3", "s4", "s5"}


def test_recovery_is_noted(tmp_path: Path) -> None:
    day(tmp_path)
    add(tmp_path, T0 + 10 * HOUR, "HEALTHY", flags=LOG, name="s7")
    with open_index(tmp_path) as index:
        t = build_timeline(index, "synth")
    assert name(t.incident.first_unhealthy) == "s5"
    assert any("HEALTHY again since s7" in n for n in t.notes)


def test_no_incident_and_never_healthy(tmp_path: Path) -> None:
    add(tmp_path, T0, "HEALTHY", name="a1", cluster_name="ok")
    add(tmp_path, T0, "WEDGED", name="b1", cluster_name="bad")
    with open_index(tmp_path) as index:
        ok = build_timeline(index, "ok")
        bad = build_timeline(index, "bad")
    assert ok.incident.first_unhealthy is None and ok.suspects == ()
    assert name(ok.incident.last_healthy) == "a1"
    assert bad.incident.last_healthy is None and name(bad.incident.first_unhealthy) == "b1"
    assert any("no HEALTHY snapshot before" in n for n in bad.notes)


def test_snapshots_without_verdict_are_skipped_when_judging(tmp_path: Path) -> None:
    add(tmp_path, T0, "HEALTHY", name="s1")
    add(tmp_path, T0 + HOUR, None, name="s2")
    add(tmp_path, T0 + 2 * HOUR, "WEDGED", env=ENV, name="s3")
    with open_index(tmp_path) as index:
        index.set_verdict("s2", None)  # e.g. the analysis failed
        inc = find_incident(index.snapshots("synth"))
    assert (name(inc.last_healthy), name(inc.first_unhealthy)) == ("s1", "s3")
    assert [s.name for s in inc.window] == ["s1", "s2", "s3"]


def test_timeline_json_shape_and_cli(tmp_path: Path) -> None:
    day(tmp_path)
    r = CliRunner().invoke(main, ["timeline", "--store", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert {"last_healthy", "first_unhealthy", "suspects"} <= set(doc)
    assert doc["last_healthy"]["name"] == "s4" and doc["first_unhealthy"]["name"] == "s5"
    first = doc["suspects"][0]
    assert {"scope", "kind", "key", "before", "after", "relevance"} <= set(first)
    assert first["key"] == "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES"
    assert first["first_seen"] == "s5" and first["first_seen_at"].startswith("2027-01-15T16:00")
    with open_index(tmp_path) as index:
        t = build_timeline(index, "synth", pin=False)
    assert timeline_json(t)["suspects"] == doc["suspects"]
    text = CliRunner().invoke(main, ["timeline", "--store", str(tmp_path)]).output
    assert text.index("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES") < text.index("--log-level")
    assert "already there while HEALTHY" in text


def test_timeline_without_store_fails_cleanly(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["timeline", "--store", str(tmp_path / "none")])
    assert r.exit_code == 1
    assert "no store at" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "none").exists()
