"""The gateway log reader on smg's real lines (ANSI colours and all), and its properties."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdforensics.parsers.router_log import parse_router_log
from tests.parsers.test_properties_basic import _FORMATISH, SETTINGS, _mutated, _run

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE = (DATA / "smg_router_log.txt").read_text()
P = "http://127.0.0.1:30696"


def test_real_smg_log() -> None:
    log = parse_router_log(SAMPLE)
    assert log.lines == len(SAMPLE.splitlines())
    first = log.transitions[0]
    assert (first.line, first.time, first.worker, first.from_state, first.to_state) == (
        12, "2026-12-03 12:17:26", P, "closed", "open")
    assert first.request_id == "gnt-T1ax9aOmIzVIzX0uo1ZVabBV"
    assert [(t.from_state, t.to_state) for t in log.transitions[2:]] == [
        ("open", "half_open"), ("open", "half_open"), ("half_open", "open"), ("half_open", "open")]
    errors = [t for t in log.tallies if t.kind == "worker_error"]
    assert [(t.role, t.worker, t.status, t.count, t.first_line, t.last_line) for t in errors] == [
        ("prefill", P, 503, 6, 4, 9)]
    assert "\x1b" not in errors[0].example and "Prefill server returned error status" in errors[0].example
    (none,) = [t for t in log.tallies if t.kind == "no_workers"]
    assert (none.role, none.count) == ("prefill", 5)


def test_journal_prefix_and_older_router_wording() -> None:
    text = ("2026-12-03T12:00:00+0000 gpu-1 smg[77]: 2026-12-03 12:00:00  INFO x: Circuit breaker "
            "state transition: closed -> open worker_url=http://10.0.0.5:30000\n"
            "Dec 03 12:00:01 gpu-1 sglang-router[8]: No decode workers available\n")
    log = parse_router_log(text)
    assert log.transitions[0].worker == "http://10.0.0.5:30000"
    assert [(t.kind, t.role, t.first_line) for t in log.tallies] == [("no_workers", "decode", 2)]


def test_empty_text() -> None:
    assert parse_router_log("").transitions == () and parse_router_log("").lines == 0


@pytest.mark.property
@SETTINGS
@given(st.one_of(_FORMATISH, _mutated([tuple(SAMPLE.split("\n"))])))
def test_never_crashes_on_mutated_or_random_text(text: str) -> None:
    log = _run(lambda: parse_router_log(text))
    assert log is not None  # a log is a grep target: it never raises
    assert all(1 <= t.line <= max(log.lines, 1) for t in log.transitions)
