"""Rising PD queue counts, the look-back window, consequences, and arbitrary text."""

from __future__ import annotations

import calendar

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.parsers.journal import match_log_signatures, scan_log_signatures


def _decode_lines(prealloc: list[int], transfer: list[int], rank: str = "TP0") -> str:
    return "".join(
        f"[2026-12-02 10:20:{i:02d} {rank}] Decode batch, #running-req: 3, #token: 900, "
        f"token usage: 0.01, #prealloc-req: {p}, #transfer-req: {t}, #retracted-req: 0, "
        f"cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0\n"
        for i, (p, t) in enumerate(zip(prealloc, transfer, strict=True)))


def test_prealloc_rising_to_the_end() -> None:
    hits = {h.key: h for h in scan_log_signatures(_decode_lines([0, 4, 9, 9, 15, 22], [2] * 6))}
    rise = hits["PREALLOC_QUEUE_RISING"]
    assert rise.kind == "cause" and rise.count == 6 and rise.ranks == ("TP0",)
    assert "#prealloc-req: 0," in rise.samples[0] and "#prealloc-req: 22," in rise.samples[-1]
    assert rise.first_epoch == calendar.timegm((2026, 12, 2, 10, 20, 0, 0, 0, 0))
    assert "TRANSFER_QUEUE_RISING" not in hits


def test_queue_that_drains_or_wobbles_is_not_rising() -> None:
    assert "PREALLOC_QUEUE_RISING" not in {
        h.key for h in scan_log_signatures(_decode_lines([0, 5, 10, 20, 3], [0] * 5))}
    assert "PREALLOC_QUEUE_RISING" not in {
        h.key for h in scan_log_signatures(_decode_lines([1, 2, 1, 2, 1, 2], [0] * 6))}
    # too few lines to call it a trend
    assert "PREALLOC_QUEUE_RISING" not in {
        h.key for h in scan_log_signatures(_decode_lines([0, 10, 20], [0] * 3))}


def test_transfer_rising_per_rank() -> None:
    text = _decode_lines([0] * 5, [1, 3, 6, 8, 12], "TP1") + _decode_lines([0] * 5, [5] * 5, "TP0")
    hits = {h.key: h for h in scan_log_signatures(text)}
    assert hits["TRANSFER_QUEUE_RISING"].ranks == ("TP1",)


def test_rising_lines_older_than_the_window_do_not_count() -> None:
    text = _decode_lines([0, 4, 9, 15, 22], [0] * 5)
    since = calendar.timegm((2026, 12, 2, 10, 21, 0, 0, 0, 0))
    assert scan_log_signatures(text, since_epoch=since) == ()


def test_consequence_on_a_cause_line_is_no_cause() -> None:
    line = ("[2025-11-11 21:44:24 DP2 TP2 EP2] Prefill bootstrap failed for request rank=2 "
            "req.rid='9c89' req.bootstrap_room=806 with exception "
            "KVTransferError(bootstrap_room=806): Aborted by AbortReq.\n")
    hits = scan_log_signatures(line)
    assert [(h.key, h.kind) for h in hits] == [("ABORTED_BY_ABORTREQ", "consequence")]
    cause = line.replace("Aborted by AbortReq.", "Request 806 timed out after 300.0s in "
                         "KVPoll.Bootstrapping")
    kinds = {h.key: h.kind for h in scan_log_signatures(cause)}
    assert kinds["PREFILL_BOOTSTRAP_FAILED"] == kinds["KV_BOOTSTRAP_TIMEOUT"] == "cause"


def test_noise_only_with_match() -> None:
    text = _decode_lines([0, 0, 0, 0], [0] * 4)
    assert scan_log_signatures(text) == ()
    assert [h.key for h in match_log_signatures(text)] == ["BATCH_STATS"]


_PIECES = st.sampled_from([
    "Decode batch, #prealloc-req: ", "#transfer-req: ", "#bootstrap-req: 9", "Prefill batch. ",
    "timed out after", "KVPoll.Bootstrapping", "Aborted by AbortReq.", "[2026-12-02 10:20:28 TP0] ",
    "[9999-99-99 99:99:99 DP1 TP3] ", "metadata not found", "Timed out waiting 5ms for recv",
    "\n", "\r\n", "\x00", "é", "#x-req: 99999999999999999999", "Watchdog timeout (", ", ",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=30)), max_size=40),
       st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)))
def test_never_crashes_on_arbitrary_lines(parts: list[str], since: float | None) -> None:
    text = "".join(parts)
    for h in match_log_signatures(text, since_epoch=since):
        assert h.count >= 1 and h.kind in ("cause", "consequence", "noise")
    assert all(h.kind != "noise" for h in scan_log_signatures(text, since_epoch=since))
