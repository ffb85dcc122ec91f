"""A store whose index is lost or corrupt: the error says how to rebuild it, and
`store reindex` rebuilds it from the bundles on disk (keeping what the old index still says)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pdforensics.cli import main
from pdforensics.store.index import INDEX, open_index
from tests.support.store import T0, add


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    s = tmp_path / "store"
    add(s, T0, "HEALTHY")
    add(s, T0 + 600, "HEALTHY")
    add(s, T0 + 1200, "WEDGED", flags=("--chunked-prefill-size", "4096"))
    with open_index(s) as index:
        first = index.snapshots()[0]
        index.set_baseline("synth", first.name)
    return s


def _names(store: Path) -> list[str]:
    with open_index(store, create=False) as index:
        return [s.name for s in index.snapshots()]


def _one_line_error(res: Result, *words: str) -> None:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pdforensics: error: "), res.output
    for w in words:
        assert w in lines[0], lines[0]


def test_lost_index_is_reported_and_rebuilt(store: Path) -> None:
    before = _names(store)
    (store / INDEX).unlink()
    _one_line_error(_run("timeline", "--store", str(store)), "lost", "pdforensics store reindex")
    res = _run("store", "reindex", "--store", str(store))
    assert res.exit_code == 0, res.output
    assert "3 bundle(s) indexed" in res.output and "no previous index" in res.output
    assert _names(store) == before
    t = _run("timeline", "--store", str(store), "--json")
    assert t.exit_code == 0, t.output
    assert "--chunked-prefill-size" in t.output


def test_corrupt_index_is_reported_and_rebuilt(store: Path) -> None:
    before = _names(store)
    (store / INDEX).write_bytes(b"this is not a database, it was overwritten\n" * 100)
    for args in (["timeline"], ["baseline", "show"], ["diff"]):
        _one_line_error(_run(*args, "--store", str(store)), "corrupt", "pdforensics store reindex")
    res = _run("store", "reindex", "--store", str(store))
    assert res.exit_code == 0, res.output
    assert "could not be read" in res.output and "baselines and pins are lost" in res.output
    broken = list(store.glob(f"{INDEX}.before-reindex-*"))
    assert len(broken) == 1 and broken[0].read_bytes().startswith(b"this is not a database")
    assert _names(store) == before


def test_corrupt_row_is_reported_and_the_baseline_survives_the_rebuild(store: Path) -> None:
    conn = sqlite3.connect(store / INDEX)
    with conn:
        conn.execute("UPDATE snapshots SET hosts = '{not json' WHERE id = 2")
        conn.execute("UPDATE snapshots SET origin = 'capture' WHERE id = 1")
    conn.close()
    _one_line_error(_run("timeline", "--store", str(store)), "corrupt", "row 2", "store reindex")
    res = _run("store", "reindex", "--store", str(store))
    assert res.exit_code == 0, res.output
    show = _run("baseline", "show", "--store", str(store), "--json")
    doc = json.loads(show.output)
    assert doc["explicit"] is True
    with open_index(store, create=False) as index:
        assert [s.origin for s in index.snapshots()] == ["capture", "snapshot", "snapshot"]


def test_reindex_skips_what_is_not_a_bundle(store: Path, tmp_path: Path) -> None:
    bundles = store / "bundles"
    (bundles / ".half-copied.123.tmp").mkdir()
    (bundles / "notes.txt").write_text("x")
    (bundles / "linked").symlink_to(tmp_path)
    bad = bundles / "bad-bundle"
    bad.mkdir()
    (bad / "manifest.json").write_text('{"results": "nope"}')
    res = _run("store", "reindex", "--store", str(store))
    assert res.exit_code == 0, res.output
    assert "3 bundle(s) indexed, 3 skipped" in res.output
    assert "skipped bad-bundle: manifest.json: results: expected a list" in res.output
    assert "skipped linked: not a bundle directory" in res.output
    assert len(_names(store)) == 3


def test_reindex_without_a_store_is_one_line(tmp_path: Path) -> None:
    _one_line_error(_run("store", "reindex", "--store", str(tmp_path / "none")), "no store")
