"""Malformed bundle documents: every shape gives one line and exit 1 (never a traceback) in
analyze, report, verify and diff; named shapes first, then hypothesis over thousands."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pdforensics.cli import main
from tests.security.crafted import make_bundle

Doc = dict[str, Any]


def _row(m: Doc) -> Doc:
    return next(r for r in m["results"] if r["source"] == "cmdline")


def _set(fn: Callable[[Doc], None]) -> Callable[[Doc], Any]:
    def run(m: Doc) -> Any:
        fn(m)
        return m
    return run


def _deep(n: int) -> str:
    return "[" * n + "]" * n


# name -> manifest.json text (from the good manifest)
MANIFEST_SHAPES: dict[str, Callable[[Doc], Any]] = {
    "top-level list": lambda m: [m],
    "top-level string": lambda m: "manifest",
    "top-level null": lambda m: None,
    "top-level number": lambda m: 1e308,
    "results is an object": _set(lambda m: m.update(results={"0": m["results"][0]})),
    "results is a string": _set(lambda m: m.update(results="raw/h1")),
    "result row is a string": _set(lambda m: m["results"].__setitem__(0, "row")),
    "result row is a list": _set(lambda m: m["results"].__setitem__(0, list(m["results"][0].items()))),
    "row missing host": _set(lambda m: _row(m).pop("host")),
    "row missing path": _set(lambda m: _row(m).pop("path")),
    "row missing started_at": _set(lambda m: _row(m).pop("started_at")),
    "host is an integer": _set(lambda m: _row(m).update(host=7)),
    "host climbs out": _set(lambda m: _row(m).update(host="..")),
    "host has a slash": _set(lambda m: _row(m).update(host="a/../../b")),
    "argv is a string": _set(lambda m: _row(m).update(argv="cat /etc/passwd")),
    "argv holds a number": _set(lambda m: _row(m).update(argv=["cat", 3])),
    "bytes negative": _set(lambda m: _row(m).update(bytes=-1)),
    "bytes huge": _set(lambda m: _row(m).update(bytes=10**30)),
    "bytes is a float": _set(lambda m: _row(m).update(bytes=1.5)),
    "exit_status is a string": _set(lambda m: _row(m).update(exit_status="0")),
    "started_at is a string": _set(lambda m: _row(m).update(started_at="yesterday")),
    "started_at beyond year 9999": _set(lambda m: _row(m).update(started_at=1e300)),
    "duration_s NaN": _set(lambda m: _row(m).update(duration_s=float("nan"))),
    "duration_s Infinity": _set(lambda m: _row(m).update(duration_s=float("inf"))),
    "timed_out is a string": _set(lambda m: _row(m).update(timed_out="yes")),
    "truncated is 1": _set(lambda m: _row(m).update(truncated=1)),
    "target is a list": _set(lambda m: _row(m).update(target=["pid", 1])),
    "target value is an object": _set(lambda m: _row(m).update(target={"pid": {"x": 1}})),
    "stderr is a list": _set(lambda m: _row(m).update(stderr=["boom"])),
    "path is absolute": _set(lambda m: _row(m).update(path="/etc/passwd")),
    "path climbs out": _set(lambda m: _row(m).update(path="raw/../../x")),
    "path is empty": _set(lambda m: _row(m).update(path="")),
    "path has a NUL": _set(lambda m: _row(m).update(path="raw/h1/x\u0000y")),
    "path is a number": _set(lambda m: _row(m).update(path=12)),
    "hosts is an object": _set(lambda m: m.update(hosts={"h1": {}})),
    "host meta missing name": _set(lambda m: m["hosts"][0].pop("name")),
    "host meta name is a list": _set(lambda m: m["hosts"][0].update(name=["h1"])),
    "host meta reachable is a string": _set(lambda m: m["hosts"][0].update(reachable="no")),
    "host meta is a string": _set(lambda m: m.update(hosts=["h1"])),
    "started_epoch is a string": _set(lambda m: m.update(started_epoch="now")),
    "finished_epoch is huge": _set(lambda m: m.update(finished_epoch=1e20)),
    "partial_reasons is a string": _set(lambda m: m.update(partial_reasons="deadline")),
    "partial_reasons holds objects": _set(lambda m: m.update(partial_reasons=[{"a": 1}])),
    "files is a list": _set(lambda m: m.update(files=["results.jsonl"])),
    "files key is absolute": _set(lambda m: m.update(files={"/etc/shadow": "00"})),
    "status is a number": _set(lambda m: m.update(status=3)),
    "cluster is an object": _set(lambda m: m.update(cluster={"name": "c"})),
    "format is a string": _set(lambda m: m.update(format="1")),
}

RAW_SHAPES: dict[str, bytes] = {
    "empty file": b"",
    "truncated JSON": b'{"results": [',
    "not UTF-8": b'{"cluster": "\xff\xfe"}',
    "UTF-16 text": '{"cluster": "c"}'.encode("utf-16"),
    "deep nesting": ('{"results": ' + _deep(100_000) + "}").encode(),
    "5000-digit integer": b'{"format": ' + b"9" * 5000 + b"}",
    "bare NaN constant": b'{"started_epoch": NaN}',
    "trailing garbage": b'{"results": []} {"x": 1}',
}

DISCOVERY_SHAPES: dict[str, Any] = {
    "discovery is a list": [],
    "services is an object": {"services": {"decode": {}}},
    "service missing port": {"services": [{"role": "decode", "kind": "server", "address": "x"}]},
    "service port is a string": {"services": [{"role": "decode", "kind": "server",
                                               "address": "x", "port": "30001"}]},
    "service pids hold strings": {"services": [{"role": "decode", "kind": "server",
                                                "address": "x", "port": 1, "pids": ["1"]}]},
    "process pid is a string": {"processes": [{"pid": "4100"}]},
    "process missing pid": {"processes": [{"ppid": 1}]},
    "notes is a string": {"notes": "n"},
}

COMMANDS = ("analyze", "report", "verify", "diff")


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Doc]:
    root = tmp_path_factory.mktemp("good")
    clean = make_bundle(root / "clean", port_flag="30002")
    return clean, json.loads((make_bundle(root / "model") / "manifest.json").read_text())


def _invoke(command: str, bundle: Path, clean: Path) -> Result:
    args = [command, str(bundle)] if command != "diff" else ["diff", str(clean), str(bundle)]
    return CliRunner().invoke(main, args)


def _assert_one_line_error(res: Result) -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pdforensics: error: "), res.output


def _bundle_with(tmp_path: Path, data: bytes) -> Path:
    b = make_bundle(tmp_path / "b")
    (b / "manifest.json").write_bytes(data)
    return b


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("shape", sorted(MANIFEST_SHAPES))
def test_malformed_manifest_shape(tmp_path: Path, good: tuple[Path, Doc], shape: str, command: str) -> None:
    clean, model = good
    doc = MANIFEST_SHAPES[shape](copy.deepcopy(model))
    b = _bundle_with(tmp_path, json.dumps(doc).encode())
    res = _invoke(command, b, clean)
    _assert_one_line_error(res)
    assert "manifest.json" in res.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("shape", sorted(RAW_SHAPES))
def test_malformed_manifest_bytes(tmp_path: Path, good: tuple[Path, Doc], shape: str, command: str) -> None:
    b = _bundle_with(tmp_path, RAW_SHAPES[shape])
    res = _invoke(command, b, good[0])
    _assert_one_line_error(res)
    assert "manifest.json" in res.stderr


@pytest.mark.parametrize("command", ("analyze", "report", "diff"))
@pytest.mark.parametrize("shape", sorted(DISCOVERY_SHAPES))
def test_malformed_discovery(tmp_path: Path, good: tuple[Path, Doc], shape: str, command: str) -> None:
    b = make_bundle(tmp_path / "b")
    (b / "parsed/h1/discovery.json").write_text(json.dumps(DISCOVERY_SHAPES[shape]))
    res = _invoke(command, b, good[0])
    _assert_one_line_error(res)
    assert "discovery.json" in res.stderr


@pytest.mark.parametrize("line", [b'"a string"', b'{"host": "h1"}', b'{"host": "../x", "source": "s"}'])
def test_malformed_results_log_of_a_crashed_capture(tmp_path: Path, good: tuple[Path, Doc], line: bytes) -> None:
    """No manifest (the capture died): rows come from results.jsonl, and are checked as well."""
    b = make_bundle(tmp_path / "b")
    (b / "manifest.json").unlink()
    (b / "results.jsonl").write_bytes(line + b"\n")
    _assert_one_line_error(_invoke("analyze", b, good[0]))


def test_a_row_cut_by_the_crash_is_skipped(tmp_path: Path, good: tuple[Path, Doc]) -> None:
    b = make_bundle(tmp_path / "b")
    rows = (b / "results.jsonl").read_bytes()
    (b / "manifest.json").unlink()
    (b / "results.jsonl").write_bytes(rows + b'{"host": "h1", "sou')
    # the reader keeps every whole row and skips the cut one
    from pdforensics.bundle.ondisk import load_bundle

    assert len(load_bundle(b).results) == rows.count(b"\n")
    # analyze tells the user to recover such a directory (issue 20), in one line
    res = _invoke("analyze", b, good[0])
    _assert_one_line_error(res)
    assert "recover" in res.output


@pytest.mark.parametrize("analysis", [
    b"[]", b'{"verdict": 3}', b'{"findings": "none"}', b'{"findings": [{"key": "K"}]}',
    b'{"findings": [{"key": "K", "severity": "high", "title": "t", "evidence": [{"path": "/etc/passwd"}]}]}',
    b"\xff", _deep(5000).encode(),
])
def test_malformed_analysis_json_in_the_store(tmp_path: Path, analysis: bytes) -> None:
    """Filing a bundle reads its analysis.json: a malformed one is one line, exit 1."""
    b = make_bundle(tmp_path / "b")
    (b / "analysis.json").write_bytes(analysis)
    res = CliRunner().invoke(main, ["baseline", "set", str(b), "--store", str(tmp_path / "s")])
    _assert_one_line_error(res)
    assert "analysis.json" in res.stderr
