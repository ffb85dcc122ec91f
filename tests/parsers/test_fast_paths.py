"""The large-log fast paths answer as the plain readings they replace (issue 30's throughput):
the whole-text line scan as a loop over the lines, the queue counts of a batch line as the
field pattern, a line's rank by its prefix as the two searches. Random text built from the
pieces these readings look for, and every line of tests/data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.parsers import journal, linescan
from pdforensics.parsers.log_trends import _FIELD_RE, _ROLE_RE, batch_line, queue_field_keys
from pdforensics.parsers.logtime import SGLANG_PREFIX

DATA = Path(__file__).resolve().parent.parent / "data"
PIECES = ["[2026-01-29 13:12:37 TP0] ", "[2026-01-29 13:12:37.25 DP1 TP3] ", "[2026-01-29 13:12:37] ",
          "[TP2] ", "[DP0 TP1]", " tp0 ", "Decode batch, ", "Prefill batch. ", "#prealloc-req: ",
          "#transfer-req: ", "#inflight-req: ", "#bootstrap-req: ", "#running-req: ", "12", "7",
          "-", "#", ", ", " ", "\t", "\r", "\n", "NCCL", "nccl", "UCX", "é", "\u212a", "\ud800",
          "x" * 30, "]", "[", "\u0130", "Killed", "KILLED"]


def _texts_of_tests_data() -> list[tuple[Path, str]]:
    """Every file of tests/data up to 4 MB, decoded as the readers get it."""
    return [(path, path.read_bytes().decode("utf-8", "replace")) for path in sorted(DATA.rglob("*"))
            if path.is_file() and path.stat().st_size <= 4_000_000]


def _text(parts: list[str]) -> str:
    return "".join(parts)


def _old_counts(line: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    fields = queue_field_keys()
    counts = tuple((n, int(v)) for n, v in _FIELD_RE.findall(line) if n in fields)
    if not counts:
        return "?", ()
    m = _ROLE_RE.search(line)
    return (m.group(1).lower() if m else "?"), counts


def _old_busy(line: str) -> bool:
    from pdforensics.analysis.pdpath.read_sglang import _RUNNING

    return any(int(m.group(1)) > 0 for m in _RUNNING.finditer(line))


def _old_rank(line: str) -> str | None:
    m = SGLANG_PREFIX.search(line[:300])
    if m and m.group(8):
        return "_".join(m.group(8).split())
    m = journal._RANK_ONLY_RE.search(line[:300]) or journal._RANK_CUT_RE.match(line[:300])
    return "_".join(m.group(1).split()) if m else None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_batch_line_counts_as_the_field_pattern(parts: list[str]) -> None:
    line = _text(parts).replace("\n", " ")
    got = batch_line(None, None, line)
    assert (got.role, got.counts) == _old_counts(line[:500])
    assert got.busy == _old_busy(line)


@given(st.integers(min_value=0, max_value=60), st.integers(min_value=0, max_value=60))
def test_a_count_of_any_length_is_read_whole(digits: int, after: int) -> None:
    """A count longer than the slice req_fields reads its digits from is read on to its end."""
    line = (f"Decode batch, #running-req: {'7' * digits}{'x' * after}, #queue-req: 3, "
            f"#transfer-req: {'1' * digits}")
    got = batch_line(None, None, line)
    assert (got.role, got.counts) == _old_counts(line[:500])
    assert got.busy == _old_busy(line)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_rank_by_prefix_as_the_two_searches(parts: list[str]) -> None:
    line = _text(parts).replace("\n", " ")
    assert journal.parse_rank(line) == _old_rank(line)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.integers(0, 3000),
       st.lists(st.sampled_from(["NCCL", "UCX", "batch", "req: 1", "\t", "é", "É", "x]", "kill"]), min_size=1,
                max_size=3), st.booleans())
def test_line_scan_finds_the_lines_the_loop_finds(parts: list[str], pad: int, marks: list[str],
                                                   fold: bool) -> None:
    # padded past SMALL so the whole-text scan (not the loop) answers
    text = _text(parts) + ("filler line\n" * (pad + 1)) + _text(parts[::-1])
    text = text * (linescan.SMALL // max(len(text), 1) + 1)
    assert len(text) >= linescan.SMALL
    assert linescan.lines_with(text, marks, fold) == linescan._loop(text, tuple(marks), fold)


def test_the_fast_paths_on_every_line_of_tests_data() -> None:
    checked = 0
    for path, text in _texts_of_tests_data():
        for line in text.split("\n"):
            assert journal.parse_rank(line) == _old_rank(line), (path, line)
            got = batch_line(None, None, line)
            assert (got.role, got.counts) == _old_counts(line[:500]), (path, line)
            assert got.busy == _old_busy(line), (path, line)
            checked += 1
        if len(text) >= linescan.SMALL:
            for marks in (("NCCL",), ("Decode batch", "Prefill batch"), ("Traceback", ".py\"")):
                assert linescan.lines_with(text, marks) == linescan._loop(text, marks, False)
                assert linescan.lines_with(text, marks, True) == linescan._loop(text, marks, True)
    assert checked > 30_000


def test_a_folded_mark_is_found_as_lower_finds_it() -> None:
    """The Kelvin sign and dotted capital I fold to ASCII under lower(): the scan answers so."""
    text = ("ok line\n" * 9000) + "\u212aelvin\n" + "\u0130nit\n"
    assert linescan.lines_with(text, ["kelvin", "init"], True) == [(9001, "\u212aelvin")]
    assert linescan.lines_with(text, ["i\u0307nit"], True) == [(9002, "\u0130nit")]
    assert "i\u0307nit" in "\u0130nit".lower()


def test_watchdog_records_as_the_logical_line_walk() -> None:
    """The NCCL watchdog's records holding a literal, by the scan, are those the walk over
    every logical line gives (wrapped records joined, 40 continuations at most)."""
    from pdforensics.parsers import nccl_watchdog as w

    wrapped = ("[rank3]:[E1126 10:00:00.1 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
               "collective\noperation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)="
               "600000)\n" + "more\n" * 45 + "\n[rank1]: WorkNCCL(SeqNum=2, OpType=X, Timeout(ms)=1)"
               " ran for 2 milliseconds\nNCCL work 5\n")
    texts = [wrapped * 300, "plain line\n" * 9000 + wrapped]
    texts += [p.read_text(errors="replace") for p in sorted((DATA / "field").rglob("*.log"))]
    for text in texts:
        walk = [(no, rec) for no, rec in w._logical_lines(text)
                if any(lit in rec for lit in w.LITERALS)]
        assert list(w._records_with_literals(text)) == walk


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, "#running-req: ", "#queue-req: ", "0", "0000000001",
                                 "1234567890123"]), max_size=40))
def test_running_requests_as_the_pattern(parts: list[str]) -> None:
    from pdforensics.analysis.pdpath.read_sglang import _RUNNING, _running

    line = _text(parts) * 20  # past the batch line's sample: busy is read from all of it
    assert _running(line) == any(int(m.group(1)) > 0 for m in _RUNNING.finditer(line))
    assert batch_line(None, None, line).busy == _running(line)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PIECES + ["Scheduler hit an exception", "KV cache pool is full",
                                          "Traceback (most recent call last):", "timed out"]),
                max_size=30))
def test_the_signature_set_as_each_pattern(parts: list[str]) -> None:
    """RE2's set step called directly on ASCII answers as every signature searched alone."""
    line = _text(parts).replace("\n", " ")
    want = [i for i, sig in enumerate(journal.SIGNATURES) if sig.pattern.search(line)]
    assert journal._SIGNATURE_SET.matching(line) == want


def _lines_of_tests_data() -> list[str]:
    return [line for _path, text in _texts_of_tests_data() for line in text.splitlines()]


HOSTILE = ["> \tFile \"x.py\", line 1, in f", "`` goroutine 1 [running]:", "[2026-01-29 13:12:37] "
           "[tag] main.f(0x1)", "2026-01-29T13:12:37.5Z   created by main.g", "> ...", ">--",
           "[2026-01-29 13:12:37 TP0]     Thread 0x7f (most recent call first):",
           "svc-1  | \tmain.go:12", "[pod/a/b] Traceback (most recent call last):",
           "Dec 28 06:43:00 host ident[12]: 1 @ 0x4", "   Error: permission denied"]


def test_the_stack_scan_supersets_hold_on_every_line() -> None:
    """A line the scanner would open a block on, read as py-spy failure output or give a
    stream matches the superset pattern the large-text scan looks for (else that scan would
    skip it)."""
    from pdforensics.parsers import stackscan as ss
    from pdforensics.parsers.logprefix import LogLine, strip_prefixes
    from pdforensics.parsers.pyspy_errors import FAILURE_SUPERSET, is_failure_line

    checked = 0
    for raw in [*_lines_of_tests_data(), *HOSTILE]:
        line = raw.rstrip("\r")
        data = line.encode("utf-8", "surrogatepass")
        ll = strip_prefixes(line)
        if ll.stream:
            assert ss._STREAM_SUPERSET.search(data), line
            continue
        t = ll.text
        opens = (ss._MAYBE_START.search(t) is not None or "Pyspy " in t
                 or (t[:1] in " \t" and ss._pyspy_orphan(t))
                 or ss._start([LogLine(t), LogLine("")], 0) is not None)
        if opens:
            assert ss._START_SUPERSET.search(data), line
            checked += 1
        if is_failure_line(t):
            assert FAILURE_SUPERSET.search(data), line
    assert checked > 5_000


def test_the_large_text_scan_finds_what_the_line_walk_finds(monkeypatch: Any) -> None:
    """Every file of tests/data scanned both ways (the large-text path forced on)."""
    from pdforensics.parsers import stackscan as ss

    for path, text in _texts_of_tests_data():
        monkeypatch.setattr(ss, "LARGE", 10**12)
        walk = ss.scan_text(text)
        monkeypatch.setattr(ss, "LARGE", 1)
        assert ss.scan_text(text) == walk, path


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, "NVRM: ", "UCX", "Job summary", "GNU gdb ", "NCCL "]),
                max_size=30), st.sampled_from(["", "é", "\ud800", "\u212a"]))
def test_has_any_as_in(parts: list[str], extra: str) -> None:
    """The registered marks found by one set search of the bytes, others by `in`: as `in`."""
    import pdforensics.parsers.beneath  # noqa: F401  (registers every reader's marks)

    text = ("filler\n" * (linescan.SMALL // 7 + 1)) + extra + _text(parts)
    for wanted in (("NVRM: ", "pcieport "), ("UCX",), ("Job summary",), ("GNU gdb ",),
                   ("NCCL ",), ("not registered", "Decode batch"), ("é",)):
        assert linescan.has_any(text, wanted) == any(m in text for m in wanted), wanted


def test_request_lines_of_a_large_text_as_every_line(monkeypatch: Any) -> None:
    """parse_request_lines reading only the lines with "equest" / "obj=" (the large-text
    path, forced on) finds the events the walk over every line finds, in every file."""
    from pdforensics.parsers import requests as rq

    for path, text in _texts_of_tests_data():
        monkeypatch.setattr(rq, "SMALL", 10**12)
        walk = rq.parse_request_lines(text)
        monkeypatch.setattr(rq, "SMALL", 1)
        assert rq.parse_request_lines(text) == walk, path


def _split_by_writer_walk(text: str) -> dict[str, str]:
    """split_by_writer as it was (e672474): every line tried."""
    from pdforensics.triage.logs import _writer

    groups: dict[str, list[str]] = {}
    current = ""
    for line in text.split("\n"):
        name = _writer(line)
        if name is not None:
            current = name
        groups.setdefault(current, []).append(line)
    return {k: "\n".join(v) for k, v in groups.items()}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, "web-1  | ", "svc_1      |", "2025-01-01T10:00:00+0000 h i[3]: ",
                                 "Dec 28 06:43:00 h sshd[1]: ", "Dec  8 06:43:00 h kernel: ", "a\n|"]),
                max_size=40))
def test_split_by_writer_as_the_walk(parts: list[str]) -> None:
    from pdforensics.triage.logs import split_by_writer

    text = _text(parts)
    assert split_by_writer(text) == _split_by_writer_walk(text)


def test_split_by_writer_on_every_file() -> None:
    from pdforensics.triage.logs import split_by_writer

    for path, text in _texts_of_tests_data():
        assert split_by_writer(text) == _split_by_writer_walk(text), path


HTTP_PIECES = ["HTTP/1.1 200 OK", "< HTTP/1.1 500 Internal", "Date: Thu, 03 Dec 2026 08:55:55 GMT",
               "< date: Thu, 03 Dec 2026 08:55:56 GMT", "$ curl -s localhost:30000/metrics",
               "# date", "Thu Dec  3 08:55:55 UTC 2026", ">>> cat x", "", "<", "\r",
               "sglang:num_running_reqs 3", "payload line", "< x"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(HTTP_PIECES), max_size=40), st.integers(0, 9000))
def test_unwrap_takes_payload_runs_as_the_walk(parts: list[str], pad: int) -> None:
    """unwrap with payload runs taken whole (forced on) answers as the line walk."""
    from pdforensics.triage import unwrap as uw

    half = len(parts) // 2
    text = "\n".join(parts[:half] + ["payload"] * pad + parts[half:])
    saved = uw.LARGE
    try:
        uw.LARGE = 10**12
        walk = uw.unwrap(text)
        uw.LARGE = 1
        assert uw.unwrap(text) == walk
    finally:
        uw.LARGE = saved


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.integers(0, 3000),
       st.lists(st.sampled_from(["NCCL", "UCX", "batch", "\t", "é", "kill"]), min_size=1, max_size=3),
       st.booleans())
def test_first_line_with_is_the_first_of_lines_with(parts: list[str], pad: int, marks: list[str],
                                                    fold: bool) -> None:
    text = ("filler line\n" * (pad + 1)) + _text(parts)
    for t in (text, text * (linescan.SMALL // len(text) + 1)):
        every = linescan.lines_with(t, marks, fold)
        assert linescan.first_line_with(t, marks, fold) == (every[0] if every else None)


@settings(max_examples=500, deadline=None)
@given(st.integers(1960, 10050), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25),
       st.integers(0, 61), st.integers(0, 61), st.sampled_from(["", ".5", ",123456789", ".1234567890",
                                                                ".x"]),
       st.sampled_from(["", " TP0", " DP1 TP3", " tp0", " TP", " ABCD1"]))
def test_sglang_bracket_time_as_the_pattern(y: int, mo: int, d: int, h: int, mi: int, s: int,
                                            frac: str, ranks: str) -> None:
    from pdforensics.parsers import logtime as lt

    head = f"[{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}{frac}{ranks}]"
    m = lt.SGLANG_PREFIX.match(head)
    want = lt.epoch(m.groups()[:7]) if m else None
    got = lt._sglang_bracket(head)
    assert (None if got is False else got) == want, head
    if m is None:
        assert got is False or want is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e",
                                 "\x85", "\u2028", "\u2029", "\ud800", "é", "\u2027"]), max_size=20),
       st.booleans())
def test_only_newlines_as_splitlines(parts: list[str], large: bool) -> None:
    """only_newlines says whether splitlines() cuts the text where split("\\n") does."""
    text = _text(parts) + ("x\n" * (linescan.SMALL // 2) if large else "")
    pieces = text.split("\n")
    same = text.splitlines() == (pieces[:-1] if pieces[-1] == "" else pieces)
    assert linescan.only_newlines(text) == ("\r" not in text and same)


def test_the_stack_sniffer_marks_are_in_every_text_its_patterns_match() -> None:
    """sniff_format searches a large text with a pattern only where one of its marks is: each
    mark set must be in every text (here every file of tests/data) its patterns match."""
    from pdforensics.analysis import stacks_load as s

    guarded = [((s._WATCHDOG,), s._WATCHDOG_MARKS), ((s._GO, s._GO_FILE, s._GO_GROUP), s._GO_MARKS),
               ((s._PYSTACK,), s._PYSTACK_MARKS), ((s._FAULT,), s._FAULT_MARKS),
               ((s._PYSPY,), s._PYSPY_MARKS), ((s._TRACEBACK,), s._TRACEBACK_MARKS)]
    matched = 0
    for path, text in _texts_of_tests_data():
        for patterns, wanted in guarded:
            for pattern in patterns:
                for m in pattern.finditer(text):
                    matched += 1
                    assert any(mark in m.group(0) for mark in wanted), (path, m.group(0))
    assert matched > 1000
