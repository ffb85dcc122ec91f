"""harvest_log_stacks: SGLang's own stack dumps out of its logs (real field logs; properties)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.parsers.logstacks import LOG_STACK_KINDS, harvest_log_stacks

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _read(name: str) -> str:
    return (FIELD / name).read_text()


def test_pp_watchdog_log_gives_each_rank_its_dump_and_time() -> None:
    dumps = harvest_log_stacks(_read("sglang_log/sglang-17941-pp-watchdog-native.log"))
    full = [d for d in dumps if d.kind == "watchdog" and d.threads]
    assert full, dumps
    d = next(d for d in full if d.pid == 88693)
    assert d.rank == "PP2_TP1" and d.timestamp == "2026-01-29 13:12:37"
    frames = " ".join(str(f) for t in d.threads for f in t.frames)
    assert "waitRecv" in frames


def test_compose_watchdog_log_keeps_rank_and_time() -> None:
    dumps = harvest_log_stacks(_read("sglang_log/sglang-12076-compose-watchdog.log"))
    tp6 = [d for d in dumps if d.rank == "TP6"]
    assert tp6 and tp6[0].pid == 309 and tp6[0].timestamp == "2025-10-29 11:25:58"


def test_dump_with_command_header_form() -> None:
    (d,) = [d for d in harvest_log_stacks(_read("sglang_log/sglang-31178-dump-with-command.log"))
            if d.threads]
    assert d.kind == "watchdog" and len(d.threads) == 4


def test_faulthandler_dump_is_a_log_stack_but_a_traceback_is_not() -> None:
    fh = harvest_log_stacks(_read("faulthandler/sglang-3745-segv-all-reduce.txt"))
    assert fh and all(d.kind == "faulthandler" for d in fh)
    assert harvest_log_stacks(_read("traceback/gen-py311-chained-cause.txt")) == ()


def test_failed_watchdog_pyspy_is_kept_as_an_error() -> None:
    dumps = harvest_log_stacks(_read("sglang_log/sglang-7783-pyspy-not-found.log"))
    assert dumps and all(d.error and not d.threads for d in dumps)


def test_empty_and_plain_logs_give_nothing() -> None:
    assert harvest_log_stacks("") == ()
    assert harvest_log_stacks("[2026-01-01 00:00:00 TP0] Prefill batch. #new-seq: 1\n") == ()


@pytest.mark.property
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([
    "[2026-01-29 13:12:37 TP1] Pyspy dump for PID 12:", "Process 12: sglang::scheduler_TP1",
    "Python v3.12.3 (/usr/bin/python3.12)", 'Thread 12 (idle): "MainThread"',
    "    all_reduce (parallel_state.py:120)", "Thread 0x00007f (most recent call first):",
    '  File "x.py", line 3 in f', "Traceback (most recent call last):", "", "garbage \x00 ]",
    "[2026-01-29 13:12:37 TP0] Pyspy failed to dump PID 9. Error: boom",
]) | st.text(max_size=40), max_size=30))
def test_never_crashes_and_keeps_only_log_stack_kinds(lines: list[str]) -> None:
    dumps = harvest_log_stacks("\n".join(lines))
    assert all(d.kind in LOG_STACK_KINDS for d in dumps)
