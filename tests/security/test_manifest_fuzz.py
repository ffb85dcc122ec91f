"""Hypothesis over manifests, discovery files and analysis.json: wrong types, missing keys,
wrong nesting, huge numbers, NaN, non-UTF-8 and deep nesting, through the CLI entry points.
Every run ends with exit 0-3 and no traceback: a bundle never crashes its reader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdforensics.cli import main
from pdforensics.store.index import open_index
from tests.security.crafted import make_bundle

pytestmark = pytest.mark.property

KEYS = ["results", "hosts", "files", "cluster", "status", "started_epoch", "finished_epoch",
        "partial_reasons", "format", "host", "source", "key", "argv", "url", "exit_status",
        "duration_s", "started_at", "timed_out", "truncated", "bytes", "sha256", "path", "error",
        "stderr", "target", "name", "address", "reachable", "pid", "port", "role", "kind",
        "services", "processes", "pids", "root_pid", "tp_size", "notes", "verdict", "findings"]
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=10**18, max_value=10**40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["/proc/self/environ", "../../x", "raw/h1", "", ".", "h1", "a/b"]))
JSON = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=3)
                    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), kids, max_size=3),
                    max_leaves=12)
EXITS = {0, 1, 2, 3}


def _mutate(doc: Any, data: st.DataObject, depth: int = 0) -> Any:
    """Replace, drop, wrap or recurse into one node of `doc`."""
    how = data.draw(st.sampled_from(["replace", "drop", "wrap", "descend", "descend", "descend"]))
    if how == "replace" or not isinstance(doc, dict | list) or not doc or depth > 6:
        return data.draw(JSON)
    if how == "wrap":
        return data.draw(st.sampled_from([[doc], {"results": doc}, {"x": doc}]))
    if isinstance(doc, dict):
        key = data.draw(st.sampled_from(sorted(doc)))
        if how == "drop":
            return {k: v for k, v in doc.items() if k != key}
        return {**doc, key: _mutate(doc[key], data, depth + 1)}
    i = data.draw(st.integers(0, len(doc) - 1))
    if how == "drop":
        return doc[:i] + doc[i + 1:]
    return doc[:i] + [_mutate(doc[i], data, depth + 1)] + doc[i + 1:]


def _encode(doc: Any, data: st.DataObject) -> bytes:
    raw = json.dumps(doc, allow_nan=True).encode()
    how = data.draw(st.sampled_from(["as-is"] * 6 + ["cut", "byte", "nest", "bom"]))
    if how == "cut":
        return raw[:data.draw(st.integers(0, len(raw)))]
    if how == "byte":
        i = data.draw(st.integers(0, max(0, len(raw) - 1)))
        return raw[:i] + data.draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"])) + raw[i + 1:]
    if how == "nest":
        n = data.draw(st.integers(50, 5000))
        return b'{"results": ' + b"[" * n + b"]" * n + b"}"
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    return raw


def _ok(res: Result) -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code in EXITS, res.output
    assert "Traceback" not in res.output


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, bytes]]:
    root = tmp_path_factory.mktemp("fuzz")
    clean = make_bundle(root / "clean", port_flag="30002")
    b = make_bundle(root / "fuzzed")
    docs = {rel: (b / rel).read_bytes() for rel in ("manifest.json", "parsed/h1/discovery.json")}
    return clean, b, docs


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_manifest_through_the_cli(pair: tuple[Path, Path, dict[str, bytes]], data: st.DataObject) -> None:
    clean, b, docs = pair
    which = data.draw(st.sampled_from(["manifest.json", "manifest.json", "parsed/h1/discovery.json"]))
    for rel, original in docs.items():
        (b / rel).write_bytes(original)
    doc = json.loads(docs[which])
    (b / which).write_bytes(_encode(_mutate(doc, data), data))
    (b / "report.html").unlink(missing_ok=True)
    for args in (["analyze", str(b)], ["verify", str(b)], ["report", str(b)],
                 ["diff", str(clean), str(b)], ["analyze", "--json", str(b)]):
        _ok(CliRunner().invoke(main, args))


@pytest.fixture(scope="module")
def store_manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A stored bundle's manifest, fixed once (hypothesis replays need the same input)."""
    b = make_bundle(tmp_path_factory.mktemp("model") / "bundles", cluster="c")
    doc: dict[str, Any] = json.loads((b / "manifest.json").read_text())
    return doc


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_bundles_in_the_store(tmp_path_factory: pytest.TempPathFactory, store_manifest: dict[str, Any],
                                     data: st.DataObject) -> None:
    """The store's readers (baseline set, timeline, diff by name) on fuzzed manifests and
    analysis.json files."""
    root = tmp_path_factory.mktemp("store")
    store = root / "s"
    healthy = make_bundle(store / "bundles", cluster="c", at=1_760_000_000.0)
    sick = make_bundle(store / "bundles", cluster="c", at=1_760_000_600.0, port_flag="30009")
    target = data.draw(st.sampled_from([healthy, sick]))
    which = data.draw(st.sampled_from(["manifest.json", "analysis.json"]))
    base = (store_manifest if which == "manifest.json"
            else {"verdict": "WEDGED", "summary": "s", "findings": []})
    (target / which).write_bytes(_encode(_mutate(base, data), data))
    with open_index(store) as index:
        index.add(healthy.name, "c", 1_760_000_000.0, "HEALTHY", "complete", "snapshot", ["h1"], {})
        index.add(sick.name, "c", 1_760_000_600.0, "WEDGED", "complete", "snapshot", ["h1"], {})
    s = ["--store", str(store)]
    for args in (["timeline", *s], ["diff", *s], ["diff", healthy.name, sick.name, *s],
                 ["baseline", "set", str(target), "--store", str(root / "other")],
                 ["store", "reindex", *s], ["timeline", *s]):
        _ok(CliRunner().invoke(main, args))
    shutil.rmtree(root, ignore_errors=True)
