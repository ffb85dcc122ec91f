"""Property tests for the stack parsers (py-spy text/JSON/failures, watchdog logs, goroutines,
faulthandler) and for what reads their results (format sniffing, stack analysis): on arbitrary
text, bytes and mutated real samples they return a well-formed frozen result or raise
ParseError, nothing else. Helpers come from test_properties_basic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdforensics.analysis.stacks import analyze_stacks, format_stacks_text, stacks_json
from pdforensics.analysis.stacks_load import _unprefixed, parse_stack_text, sniff_format
from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.parsers.faulthandler import parse_faulthandler
from pdforensics.parsers.frames import ProcessDump, ThreadStack
from pdforensics.parsers.goroutines import parse_goroutines
from pdforensics.parsers.pyspy import (
    classify_pyspy_error,
    extract_watchdog_dumps,
    parse_pyspy_json,
    parse_pyspy_text,
)
from tests.parsers.test_properties_basic import _FORMATISH, SETTINGS, _check_frozen, _mutated, _run

pytestmark = pytest.mark.property

DATA = Path(__file__).resolve().parent.parent / "data"
REASONS = {"not_installed", "permission", "suspend_failed", "not_python", "no_such_process", "timeout",
           "native_unsupported", "unsupported_python", "file_not_found",
           "unknown"}


def _lines(*globs: str) -> list[tuple[str, ...]]:
    """Sample files (not folders, not notes), split into lines; long ones keep head and tail."""
    out = []
    for g in globs:
        for p in sorted(DATA.glob(g)):
            if p.is_file() and p.suffix != ".md":
                lines = p.read_text(errors="replace").split("\n")
                out.append(tuple(lines if len(lines) <= 400 else lines[:300] + lines[-40:]))
    return out


# Fragments of every stack format, so generated text often gets deep into the parsers.
_FRAGMENTS = [
    "Process 12: ", "Parent Process 1: x", "Python v3.11.7 (/usr/bin/python)", 'Thread 12 (idle): "',
    "Thread 0x7F01 (active+gil)", "    ", "        Locals:", "            x: 1", "func (f.py:3)",
    "(libc.so.6)", " ()", "-" * 24, "Error: Failed to find python version", "Caused by:",
    "Permission Denied", "[2026-01-02 03:04:05 TP1] ", "[2026-01-02 03:04:05 DP1 TP0] ",
    "Pyspy dump for PID 12:", "Pyspy failed to dump PID 3. Error: x", "decode-0  | ",
    "goroutine 1 [select, 3 minutes]:", "goroutine 2 gp=0x1 m=nil [IO wait]:", "main.f(0x1, {0x2})",
    "\t/src/main.go:20 +0x1d", "created by main.main in goroutine 1", "[originating from goroutine 4]:",
    "...additional frames elided...", "goroutine profile: total 3", "3 @ 0x1 0x2", "#\t0x1\tmain.f+0x1\t/m.go:3",
    "# labels: {}", "Thread 0x00007f (most recent call first):", "Current thread 0x1 (most recent call first):",
    '  File "/x.py", line 4 in f', '  File "x", line ??? in <module>', "Stack (most recent call first):",
    "Fatal Python error: Aborted", "Extension modules: a (total: 1)", "\n", "\n\n", "\r\n", "\t", " ", ":", "(",
    ")", "[", "]", "0", "9", "é", "\x00",
]
_STACKISH = st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join)
_BYTES = st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace"))


def _inputs(*globs: str) -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=200), _FORMATISH, _BYTES, _STACKISH, _mutated(_lines(*globs)))


def _check_thread(t: ThreadStack) -> None:
    assert isinstance(t.thread_id, str) and t.thread_id
    assert isinstance(t.state, str) and isinstance(t.frames, tuple)
    assert t.count >= 0 and (t.wait_minutes is None or t.wait_minutes >= 0)
    for f in t.frames:
        assert isinstance(f.function, str) and (f.line is None or f.line >= 0)


def _check_dumps(dumps: tuple[ProcessDump, ...]) -> None:
    for d in dumps:
        if d.error is not None:
            assert d.threads == () and d.error
        for t in d.threads:
            _check_thread(t)
    # whatever a parser returns, the analysis and both outputs take it
    report = analyze_stacks([LabelledDump(d, host="h", source="s") for d in dumps])
    assert report.threads == sum(b.count for b in report.buckets)
    assert report.errors == tuple(e for e in report.errors if e.message)
    json.dumps(stacks_json(report))
    assert format_stacks_text(report).endswith("\n")


@SETTINGS
@given(_inputs("pyspy_*"), st.none() | st.integers(-1, 300))
def test_pyspy_text(text: str, status: int | None) -> None:
    dumps = _run(lambda: parse_pyspy_text(text))
    if dumps is not None:
        _check_dumps(dumps)
    failure = classify_pyspy_error(text, status)
    if failure is not None:
        assert failure.reason in REASONS and failure.fix and len(failure.message) <= 300
        _check_frozen(failure)
    elif status not in (0, None):
        raise AssertionError("a non-zero exit always gives a failure")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(
        st.sampled_from(["pid", "thread_id", "os_thread_id", "thread_name", "active", "owns_gil", "frames",
                         "name", "filename", "short_filename", "line", "locals", "repr", "x"]), kids, max_size=6),
    max_leaves=15,
)


# numbers first: the edges (NaN, infinities, huge, bool-as-int) are where typed readers break
_NUM = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, 2**70, -1, 0, True]) | (
    st.floats() | st.integers(-(2**70), 2**70))
_LEAF = _NUM | st.none() | st.text(max_size=12)
_FRAME = st.fixed_dictionaries({}, optional={
    "name": _LEAF, "filename": _LEAF, "short_filename": _LEAF, "line": _LEAF,
    "locals": _LEAF | st.lists(_LEAF | st.fixed_dictionaries({}, optional={"name": _LEAF, "repr": _LEAF}),
                               max_size=2)})
_THREAD = st.fixed_dictionaries({}, optional={
    k: _LEAF for k in ("pid", "thread_id", "os_thread_id", "thread_name", "active", "owns_gil")} | {
    "frames": st.lists(_FRAME | _LEAF, max_size=4) | _LEAF})
_PYSPY_DOC = st.lists(_THREAD | _LEAF, max_size=4)  # py-spy --json shaped, wild values


@SETTINGS
@given(st.one_of(_PYSPY_DOC.map(json.dumps), _JSON.map(json.dumps), _inputs("pyspy_*.json")))
def test_pyspy_json(text: str) -> None:
    dumps = _run(lambda: parse_pyspy_json(text))
    if dumps is not None:
        assert all(d.kind == "pyspy-json" for d in dumps)
        _check_dumps(dumps)


@SETTINGS
@given(_inputs("watchdog_*", "log_*"))
def test_watchdog_logs(text: str) -> None:
    dumps = _run(lambda: extract_watchdog_dumps(text))
    assert dumps is not None  # grep-like: never raises
    for d in dumps:
        assert d.kind == "watchdog" and d.pid is not None and d.timestamp
        assert d.rank is None or all(part[:2].isalpha() for part in d.rank.split("_"))
    _check_dumps(dumps)


@SETTINGS
@given(_inputs("go_*"))
def test_goroutines(text: str) -> None:
    gs = _run(lambda: parse_goroutines(text))
    if gs is not None:
        assert all(g.goroutine for g in gs)
        if not text.strip():
            assert gs == ()
        _check_dumps((ProcessDump("goroutines", gs),))


@SETTINGS
@given(_inputs("faulthandler_*"))
def test_faulthandler(text: str) -> None:
    d = _run(lambda: parse_faulthandler(text))
    if d is not None:
        assert d.kind == "faulthandler" and sum(t.current for t in d.threads) <= len(d.threads)
        _check_dumps((d,))
    elif not text.strip():
        assert parse_faulthandler(text) is None


@SETTINGS
@given(_inputs("pyspy_*", "go_pprof_debug1*", "faulthandler_*", "watchdog_dp*"))
def test_sniff_and_dispatch(text: str) -> None:
    fmt = sniff_format(text)
    assert fmt in (None, "pyspy-json", "watchdog", "goroutines", "faulthandler", "pyspy", "pystack",
                   "traceback")
    dumps = _run(lambda: parse_stack_text(text))
    if dumps is not None:  # a dump is found only where a format is (maybe under log prefixes)
        assert fmt is not None or not dumps or sniff_format(_unprefixed(text)) is not None
        _check_dumps(dumps)
