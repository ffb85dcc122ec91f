"""Every stack artifact of the field corpus (tests/data/field) reads as its sidecar says.

One case per sidecar of the stack families: the thread count, the frame where the thread
that matters waits, goroutines waiting for minutes, the py-spy failure cause; and the
`stacks` command's exit code on that file alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.analysis.stacks import analyze_stacks
from pdforensics.analysis.stacks_classify import blocked_frame
from pdforensics.analysis.stacks_load import load_stack_file
from pdforensics.cli import main
from pdforensics.parsers.pyspy_errors import classify_pyspy_error

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
FAMILIES = ("pyspy", "pyspy_error", "faulthandler", "traceback", "pystack", "go", "sglang_log")


def _cases() -> list[tuple[Path, dict[str, object]]]:
    out = []
    for fam in FAMILIES:
        for meta in sorted((FIELD / fam).glob("*.meta.json")):
            art = next(p for p in meta.parent.glob(meta.name.replace(".meta.json", ".*"))
                       if not p.name.endswith(".meta.json"))
            out.append((art, json.loads(meta.read_text())))
    return out


CASES = _cases()


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 65
    assert {p.parent.name for p, _ in CASES} == set(FAMILIES)
    for _, meta in CASES:
        assert meta["source"] and meta["format"] and meta["kind"] in (
            "stacks", "goroutines", "pyspy_error")


@pytest.mark.parametrize("path, meta", CASES, ids=[f"{p.parent.name}/{p.stem}" for p, _ in CASES])
def test_reading(path: Path, meta: dict[str, object]) -> None:
    expect = meta["expect"]
    assert isinstance(expect, dict)
    dumps = load_stack_file(str(path))
    threads = [t for d in dumps for t in d.dump.threads]
    if "threads" in expect:
        assert sum(t.count for t in threads) == expect["threads"]
    if "blocked_frame" in expect:
        where = [f.function for t in threads if (f := blocked_frame(t)) is not None]
        assert any(str(expect["blocked_frame"]) in fn for fn in where), where
    if "long_waits" in expect:
        report = analyze_stacks(dumps)
        assert report.long_waits == expect["long_waits"]
    if "pyspy_error" in expect:
        causes = [failure.reason for d in dumps if d.dump.error is not None
                  and (failure := classify_pyspy_error(d.dump.error, 1)) is not None]
        assert expect["pyspy_error"] in causes and "unknown" not in causes


@pytest.mark.parametrize("path, meta", CASES, ids=[f"{p.parent.name}/{p.stem}" for p, _ in CASES])
def test_stacks_command(path: Path, meta: dict[str, object]) -> None:
    res = CliRunner().invoke(main, ["stacks", str(path)])
    if meta["kind"] == "pyspy_error":
        assert res.exit_code == 1 and "fix:" in res.output and str(path) in res.output
    else:
        assert res.exit_code == 0, res.output
        assert " threads in " in res.output and not res.output.startswith("0 threads")
        assert "0 processes" not in res.output.splitlines()[0]
