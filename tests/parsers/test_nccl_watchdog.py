"""torch's ProcessGroupNCCL watchdog lines (field artifacts) and the cross-rank reading: the
rank behind, the rank that never joined, the victims, and nobody when the ranks agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.parsers.nccl_watchdog import HEARTBEAT, STATUS, TAKEDOWN, TIMEOUT, cross_rank, read_watchdog

NCCL = Path(__file__).resolve().parent.parent / "data" / "field" / "nccl"


def _read(slug: str) -> str:
    return next(NCCL.glob(slug + ".*[!n]")).read_text()


def _lines(*rows: tuple[int, int, int, int]) -> str:
    """Watchdog + status lines in torch 2.x's own format, one (rank, seq, enqueued, completed)
    per rank: the numbers are what a test varies, the shape is as torch prints it."""
    out = []
    for rank, seq, enq, done in rows:
        out.append(f"[rank{rank}]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank {rank}] "
                   f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                   "OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran "
                   "for 600020 milliseconds before timing out.")
        out.append(f"[rank{rank}]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG "
                   f"GUID 0(default_pg) Rank {rank}] Exception (either an error or timeout) "
                   f"detected by watchdog at work: {seq}, last enqueued NCCL work: {enq}, last "
                   f"completed NCCL work: {done}.")
    return "\n".join(out) + "\n"


def test_three_ranks_in_the_same_collective_name_nobody() -> None:
    recs = read_watchdog(_read("basicsr-737-watchdog-allreduce-3-ranks"))
    assert [(r.kind, r.rank) for r in recs] == [(TIMEOUT, "1"), (STATUS, "1"), (TIMEOUT, "0"),
                                              (STATUS, "0"), (TIMEOUT, "2")]
    assert recs[0].seq == 808 and recs[0].op == "ALLREDUCE" and recs[0].timeout_ms == 600000
    assert (recs[1].last_enqueued, recs[1].last_completed, recs[1].pg) == (811, 807, "0/0 (default_pg)")
    cr = cross_rank(recs)
    assert cr.suspects == () and cr.victims == ("1", "0", "2")


def test_the_rank_with_the_lowest_last_completed_is_behind() -> None:
    cr = cross_rank(read_watchdog(_lines((0, 808, 811, 807), (1, 808, 811, 807), (2, 806, 811, 805),
                                         (3, 808, 811, 807))))
    assert [s.rank for s in cr.behind] == ["2"] and cr.suspects == ("2",)
    assert set(cr.victims) == {"0", "1", "3"}


def test_a_rank_that_enqueued_nothing_never_joined() -> None:
    cr = cross_rank(read_watchdog(_lines((0, 1, 1, 0), (1, 1, 1, 0), (2, 1, -1, -1))))
    assert [s.rank for s in cr.never_joined] == ["2"] and cr.behind == ()


def test_a_rank_idle_while_the_others_wait_in_the_next_collective_never_joined_it() -> None:
    cr = cross_rank(read_watchdog(_lines((0, 57, 57, 56), (1, 57, 57, 56), (2, 56, 56, 56))))
    assert [s.rank for s in cr.never_joined] == ["2"] and cr.waiting_in == 57


def test_half_the_ranks_lower_is_no_minority_and_names_nobody() -> None:
    cr = cross_rank(read_watchdog(_lines((0, 9, 10, 8), (1, 9, 10, 8), (2, 8, 10, 7), (3, 8, 10, 7))))
    assert cr.suspects == ()


def test_a_single_rank_cannot_be_compared() -> None:
    recs = read_watchdog(_read("nccl-1504-first-work-never-completed"))
    status = next(r for r in recs if r.kind == STATUS)
    assert (status.seq, status.last_enqueued, status.last_completed) == (1, 1, -1)
    assert any(r.kind == TAKEDOWN for r in recs) and cross_rank(recs).suspects == ()


def test_ranks_that_disagree_on_the_collective_are_a_mismatch_not_a_suspect() -> None:
    cr = cross_rank(read_watchdog(_read("nccl-1409-watchdog-broadcast-vs-allreduce")))
    assert cr.mismatched == ((80078, (("3", "ALLREDUCE"), ("7", "BROADCAST"))),)
    assert cr.suspects == ()


def test_old_format_without_groups_compares_nothing() -> None:
    recs = read_watchdog(_read("pytorch-118369-watchdog-old-format"))
    assert [r.rank for r in recs] == ["0", "0", "0", "0", "7"] and recs[0].pg is None
    assert cross_rank(recs).suspects == ()  # rank 7's SeqNum counts another group's work


def test_wrapped_and_prefixed_lines_are_joined() -> None:
    recs = read_watchdog(_read("milabench-269-watchdog-frames-wrapped-prefixed"))
    assert len(recs) == 1 and "last enqueued NCCL work: 2082" in recs[0].text
    assert (recs[0].seq, recs[0].last_completed, recs[0].rank) == (2070, 2069, "3")


def test_a_stuck_watchdog_with_no_timeout_before_it_is_the_suspect() -> None:
    recs = read_watchdog(_read("vlm-r1-257-watchdog-heartbeat-stuck-wrapped"))
    assert recs[0].kind == HEARTBEAT and recs[0].stuck_s == 480
    assert any("Terminating the process after attempting to dump debug info" in r.text for r in recs)
    assert cross_rank(recs).suspects == ("6",)


def test_a_stuck_watchdog_after_a_collective_timeout_is_its_consequence() -> None:
    cr = cross_rank(read_watchdog(_read("arctictraining-219-heartbeat-and-watchdog-mixed")))
    assert cr.stuck_watchdogs == () and [r.rank for r in cr.explained_stalls] == ["7"]


@pytest.mark.parametrize("slug", ["nccl-1609-nvls-init-info-control",
                                  "pytorch-105287-init-connected-rings-control",
                                  "nccl-tests-227-bootstrap-init-roce-control"])
def test_init_lines_hold_no_watchdog_record(slug: str) -> None:
    assert read_watchdog(_read(slug)) == ()


def test_a_dump_signal_from_another_rank_carries_its_numbers() -> None:
    text = ("[rank6]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID "
            "0(default_pg) Rank 6] Received a dump signal due to a collective timeout from  rank 7 "
            "and we will try our best to dump the debug info. Last enqueued NCCL work: 56116, last "
            "completed NCCL work: 56116.This is most likely caused by incorrect usages\n")
    (rec,) = read_watchdog(text)
    assert (rec.kind, rec.from_rank, rec.last_enqueued, rec.last_completed) == (STATUS, "7", 56116, 56116)
