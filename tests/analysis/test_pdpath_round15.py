"""Readings added in the fifteenth round (6 December, session 5): a traceback's rank is that of
the line its frames follow ("[... TP0] Traceback", "[DP5 ...] Scheduler hit an exception:"),
also where a paste cut that line's "[date" off; a weaker failure on another rank does not hide
the rank that crashed. Texts are cut from the real artifacts (tests/data/field/traceback/)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.journal import parse_rank
from tests.support.diagnosis import diagnose_text

# sglang 2011: the scheduler's traceback, cut before its exception line, headed by TP0's prefix
_CUT_UNDER_TP0 = (
    "[2024-11-12 11:34:43 TP0] Traceback (most recent call last):\n"
    '  File "/workdir/repos/sglang/python/sglang/srt/managers/scheduler.py", line 1210, in '
    "run_scheduler_process\n    scheduler.event_loop_overlap()\n"
    '  File "/workdir/repos/sglang/python/sglang/srt/managers/scheduler.py", line 615, in '
    "get_next_batch_to_run\n    self.running_batch.merge_batch(self.last_batch)\n")

# sglang 20485: a refused bootstrap on DP3 (a KVTransferError), the scheduler of DP5 crashed
_TWO_RANKS = (
    "[DP3 TP3 EP3 PP1] Prefill bootstrap failed for request rank=3 req.rid='28a38646...' \n"
    "  with exception KVTransferError(bootstrap_room=...): Request ... timed out after 600.0s "
    "in KVPoll.Bootstrapping\n\n"
    "[DP5 TP5 EP5 PP1] Scheduler hit an exception:\n"
    '  File "sglang/srt/managers/scheduler.py", line 2668, in run_scheduler_process\n'
    "    scheduler.event_loop_pp_disagg_prefill()\n"
    '  File "sglang/srt/disaggregation/prefill.py", line 230, in pop_bootstrapped\n'
    "    assert poll == KVPoll.WaitingForInput or poll == KVPoll.Failed\n"
    "AssertionError\n")


def test_a_cut_traceback_carries_the_rank_of_its_header(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _CUT_UNDER_TP0, "crash.txt")
    cut = next(c for c in d.labelled("cause") if c.key == "PYTHON_TRACEBACK_CUT")
    assert cut.rank == "TP0" and d.suspect == "TP0"


def test_without_its_header_the_rank_is_not_guessed(tmp_path: Path) -> None:
    body = _CUT_UNDER_TP0.split("\n", 1)[1]  # the frames alone
    d = diagnose_text(tmp_path, body, "crash.txt")
    assert all(c.rank is None for c in d.labelled("cause")) and d.suspect is None


def test_the_rank_that_crashed_is_the_suspect_beside_a_weaker_failure(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _TWO_RANKS, "prefill.log")
    exc = next(c for c in d.labelled("cause") if c.key == "PYTHON_EXCEPTION")
    assert exc.rank == "DP5_TP5_EP5_PP1" and d.suspect == "DP5 TP5 EP5 PP1"


def test_a_prefix_cut_before_its_time_still_names_the_rank() -> None:
    assert parse_rank("17:15:42 DP3 TP3 EP3] Scheduler hit an exception: Traceback") == "DP3_TP3_EP3"
    assert parse_rank("DP3 TP3] x") == "DP3_TP3"
    assert parse_rank("TP0 is fine, says the note") is None  # no closing bracket: not a prefix
    assert parse_rank("12:00:01 the TP3] log") is None  # words before the rank: not a prefix
