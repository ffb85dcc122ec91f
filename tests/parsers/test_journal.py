"""Log signature scanner on journal and docker compose samples (tests/data/log_*)."""

from __future__ import annotations

import calendar
from pathlib import Path

from pdforensics.parsers.journal import (
    SIGNATURES,
    parse_log_timestamp,
    parse_rank,
    scan_log_signatures,
)

DATA = Path(__file__).resolve().parent.parent / "data"


ORIGINAL_KEYS = {
    "KV_BOOTSTRAP_TIMEOUT", "KV_WAITING_TIMEOUT", "DECODE_TRANSFER_FAILED",
    "PREFILL_BOOTSTRAP_FAILED", "KV_TRANSFER_ERROR", "LOST_PREFILL_CONNECTION",
    "WATCHDOG_TIMEOUT", "PYSPY_DUMP", "HEALTH_CHECK_FAILED", "ABORTED_BY_ABORTREQ",
    "SCHEDULER_EXCEPTION", "PYTHON_TRACEBACK", "CUDA_ERROR", "NCCL_ERROR", "OUT_OF_MEMORY",
}


def _epoch(s: str) -> float:
    return float(calendar.timegm(tuple(int(x) for x in s.split()) + (0, 0, 0)))  # type: ignore[arg-type]


def test_signature_table_is_well_formed() -> None:
    keys = [s.key for s in SIGNATURES]
    assert len(keys) == len(set(keys))
    assert all(k.isupper() and " " not in k for k in keys)
    kinds = {s.key: s.kind for s in SIGNATURES}
    assert kinds["ABORTED_BY_ABORTREQ"] == "consequence"
    assert kinds["KV_BOOTSTRAP_TIMEOUT"] == "cause"
    for s in SIGNATURES:
        assert s.literal == s.literal.lower()


def test_journal_pd_wedge() -> None:
    hits = {h.key: h for h in scan_log_signatures((DATA / "log_journal_pd_wedge.txt").read_text())}
    # every signature of the hand-written table fires; of the keys the generated table
    # added, only the scheduler's state dump after the watchdog line is in this log
    assert set(hits) == ORIGINAL_KEYS | {"SCHEDULER_DEBUG_DUMP"}
    assert ORIGINAL_KEYS <= {s.key for s in SIGNATURES}
    boot = hits["KV_BOOTSTRAP_TIMEOUT"]
    assert boot.count == 2 and boot.ranks == ("TP0", "TP1")
    assert boot.first_epoch == boot.last_epoch == _epoch("2026 12 2 10 20 28")
    assert boot.samples[0].startswith("2026-12-02T10:20:28+0000 gpu-a sglang-prefill[4101]")
    wait = hits["KV_WAITING_TIMEOUT"]
    assert wait.count == 1 and wait.ranks == ("DP1_TP3",)
    assert hits["KV_TRANSFER_ERROR"].count == 3
    assert hits["KV_TRANSFER_ERROR"].first_epoch == _epoch("2026 12 2 10 20 28")
    assert hits["KV_TRANSFER_ERROR"].last_epoch == _epoch("2026 12 2 10 20 31")
    assert hits["ABORTED_BY_ABORTREQ"].kind == "consequence"
    assert hits["PYSPY_DUMP"].ranks == ("DP1_TP3",)
    assert hits["CUDA_ERROR"].count == 1  # "unhandled cuda error" in the NCCL line is not it
    assert hits["NCCL_ERROR"].count == 1
    assert hits["OUT_OF_MEMORY"].count == 1


def test_since_epoch_filters_old_lines() -> None:
    text = (DATA / "log_journal_pd_wedge.txt").read_text()
    hits = {h.key: h for h in scan_log_signatures(text, since_epoch=_epoch("2026 12 2 10 25 0"))}
    assert "KV_BOOTSTRAP_TIMEOUT" not in hits
    assert hits["WATCHDOG_TIMEOUT"].count == 1
    # continuation lines inherit the time of the line before them
    assert hits["OUT_OF_MEMORY"].first_epoch == _epoch("2026 12 2 10 25 30")
    assert scan_log_signatures(text, since_epoch=_epoch("2027 1 1 0 0 0")) == ()


def test_compose_prefixes() -> None:
    hits = {h.key: h for h in scan_log_signatures((DATA / "log_compose_sglang.txt").read_text())}
    assert hits["OUT_OF_MEMORY"].ranks == ("TP1",)
    assert hits["KV_WAITING_TIMEOUT"].first_epoch == _epoch("2026 12 2 10 20 40")
    assert hits["ABORTED_BY_ABORTREQ"].first_epoch == _epoch("2026 12 2 10 20 42") + 0.123456
    assert "WATCHDOG_TIMEOUT" not in hits


def test_timestamps_and_ranks() -> None:
    t = _epoch("2026 12 2 10 20 28")
    assert parse_log_timestamp("[2026-12-02 10:20:28 TP0] x") == t
    assert parse_log_timestamp("[2026-12-02 10:20:28] x") == t
    assert parse_log_timestamp("2026-12-02T10:20:28+0000 host sglang[1]: x") == t
    assert parse_log_timestamp("2026-12-02T11:20:28+01:00 host x") == t
    assert parse_log_timestamp("decode-1  | 2026-12-02T10:20:28Z msg") == t
    assert parse_log_timestamp("[Wed Dec  2 10:20:28 2026] NVRM") == t
    assert parse_log_timestamp("Dec 02 10:20:28 host x") is None  # no year: unknown
    assert parse_log_timestamp("no time here") is None
    assert parse_rank("[2026-12-02 10:20:28 DP1 TP3] x") == "DP1_TP3"
    assert parse_rank("[TP5] Pyspy dump for PID 7:") == "TP5"
    assert parse_rank("[2026-12-02 10:20:28] x") is None


def test_empty_and_unrelated_text() -> None:
    assert scan_log_signatures("") == ()
    assert scan_log_signatures("all good\nnothing to see\n") == ()
    assert scan_log_signatures("\x00\xff garbage [2026-99-99 99:99:99 TP0] Watchdog timeout")[0].first_epoch is None
