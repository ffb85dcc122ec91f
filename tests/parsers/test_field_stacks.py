"""Every stack artifact of the field corpus (tests/data/field) reads as its sidecar says.

One case per sidecar whose kind is a stack dump (stacks, goroutines, py-spy failures), in
any family: the thread count, the frame where the thread that matters waits, goroutines
waiting for minutes, the py-spy failure cause; and the `stacks` command's exit code on that
file alone. What the readers do not meet yet is a strict xfail with its reason
(tests/data/field/known_gaps.json), never a skip.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pdforensics.analysis.stacks import analyze_stacks
from pdforensics.analysis.stacks_classify import blocked_frame
from pdforensics.analysis.stacks_load import load_stack_file
from pdforensics.cli import main
from pdforensics.errors import PdforensicsError
from pdforensics.parsers.pyspy_errors import classify_pyspy_error
from tests.support.field import Case, cases, params

KINDS = ("stacks", "goroutines", "pyspy_error")
CASES = cases(KINDS)
READING_KEYS = ("threads", "min_threads", "blocked_frame", "long_waits", "pyspy_error", "kind",
                "read")


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 90
    assert {"pyspy", "pyspy_error", "faulthandler", "traceback", "pystack", "go",
            "sglang_log", "gdb"} <= {c.path.parent.name for c in CASES}
    for c in CASES:
        assert c.meta["source"] and c.meta["format"] and c.meta["kind"] in KINDS


@pytest.mark.parametrize("case", params(CASES, *READING_KEYS))
def test_reading(case: Case) -> None:
    path, expect = case.path, case.expect
    if "read_error" in expect:  # the right reading is a refusal that says why
        with pytest.raises(PdforensicsError, match=str(expect["read_error"])):
            load_stack_file(str(path))
        return
    dumps = load_stack_file(str(path))
    threads = [t for d in dumps for t in d.dump.threads]
    if "threads" in expect:
        assert sum(t.count for t in threads) == expect["threads"]
    if "min_threads" in expect:
        assert sum(t.count for t in threads) >= expect["min_threads"]
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


@pytest.mark.parametrize("case", params(CASES, "kind", "read", "stacks_command"))
def test_stacks_command(case: Case) -> None:
    path = case.path
    res = CliRunner().invoke(main, ["stacks", str(path)])
    if "read_error" in case.expect:
        assert res.exit_code == 1 and str(case.expect["read_error"]) in res.output
        return
    if case.meta["kind"] == "pyspy_error":
        assert res.exit_code == 1 and "fix:" in res.output and str(path) in res.output
    else:
        assert res.exit_code == 0, res.output
        assert " threads in " in res.output and not res.output.startswith("0 threads")
        assert "0 processes" not in res.output.splitlines()[0]
