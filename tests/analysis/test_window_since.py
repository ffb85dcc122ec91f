"""The evidence window and "since": old lines are history and never set the verdict; the
window starts at the later of the server's start and the look-back (or --since); "since" is
dated only by the evidence of the findings that set the verdict, from the start of the run
of lines that reaches into the window."""

from __future__ import annotations

import time
from typing import Any

from click.testing import CliRunner

from pdforensics.analysis.engine import analyze
from pdforensics.cli import main
from pdforensics.views.loaded import load_capture
from pdforensics.views.window import LOOKBACK_S, Since, parse_since
from tests.support.bundles import T0

GEN = "sglang:generation_tokens_total"
FMT = "%Y-%m-%d %H:%M:%S"
TRANSFER = ("Decode transfer failed for request rid-{n}: KVTransferError timed out after 300.0s "
            "in KVPoll.WaitingForInput")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def line(at: float, text: str, rank: str = "TP0") -> str:
    return f"[{time.strftime(FMT, time.gmtime(at))} {rank}] {text}"


def log(*rows: tuple[float, str]) -> str:
    return "\n".join(line(t, x) for t, x in rows) + "\n"


def moving(i: int) -> dict[str, object]:
    return {GEN: 100 + 50 * i, "sglang:num_running_reqs": 9}


FROZEN = {GEN: 5, "sglang:num_running_reqs": 9, "sglang:num_decode_transfer_queue_reqs": 14}


def every(start: float, end: float, step: float, text: str) -> list[tuple[float, str]]:
    out, t = [], start
    while t < end:
        out.append((t, text.format(n=int(t))))
        t += step
    return out


def test_a_recovered_cluster_reads_healthy_and_keeps_the_wedge_as_history(builder: Any) -> None:
    """Transfer failures from 40 to 20 min before the capture, none since: HEALTHY."""
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                log=log(*every(T0 - 2400, T0 - 1200, 5, TRANSFER)))
    a = analyze(load_capture(builder.write()))
    assert a.verdict == "HEALTHY", (a.summary, [f.key for f in a.findings])
    assert a.since is None and a.window is not None and a.window.how == "look-back 10 min"
    assert a.window.start == T0 - 1 - LOOKBACK_S
    assert any("DECODE_TRANSFER_FAILED" in h for h in a.window.history), a.window.history


def test_a_restart_starts_the_window(builder: Any) -> None:
    """Failures 5 min ago, the server restarted 2 min ago: history (the restart ended them)."""
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                start=T0 - 120, log=log(*every(T0 - 300, T0 - 180, 5, TRANSFER)))
    a = analyze(load_capture(builder.write()))
    assert a.verdict == "HEALTHY" and a.window is not None and a.window.how == "server start"
    assert a.window.start == T0 - 120
    # the same bundle read with --since before the failures judges them again
    again = analyze(load_capture(builder.root / "bundle", since=Since("10m", seconds_before=600)))
    assert again.verdict == "DEGRADED" and "LOG_SIGNATURE" in [f.key for f in again.findings]


def test_since_of_a_wedge_is_its_own_run_not_the_earlier_incident(builder: Any) -> None:
    """An hour-old incident (history), then a new wedge 3 min ago: since = 3 min ago."""
    old = every(T0 - 3600, T0 - 3300, 5, TRANSFER)
    new = every(T0 - 180, T0, 5, TRANSFER)
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, log=log(*old, *new))
    a = analyze(load_capture(builder.write()))
    assert a.verdict == "WEDGED", a.summary
    assert a.since is not None and a.since.at == T0 - 180, (a.since, T0)
    assert "decode" in a.since.evidence


def test_a_wedge_older_than_the_look_back_keeps_its_true_start(builder: Any) -> None:
    """Failures every 30 s for 40 min, still going: the run began 40 min ago, before the
    10 min window, and since says so (one incident, lasting)."""
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3,
                log=log(*every(T0 - 2400, T0, 30, TRANSFER)))
    a = analyze(load_capture(builder.write()))
    assert a.verdict == "WEDGED" and a.since is not None and a.since.at == T0 - 2400


def test_since_is_dated_only_by_evidence_tied_to_the_findings(builder: Any) -> None:
    """A KV-pressure DEGRADED while an unrelated transfer failure sits in the window: since
    comes from the pressure's own signatures (the OOM line), not from the transfer line."""
    pressure = {GEN: 100, "sglang:num_running_reqs": 9, "sglang:token_usage": 0.99,
                "sglang:num_retracted_reqs": 3}
    rising = [dict(pressure, **{GEN: 100 + 30 * i}) for i in range(3)]
    builder.add(host="d", role="decode", port=2, samples=rising,
                log=log((T0 - 500, TRANSFER.format(n=1)), (T0 - 100, OOM)))
    a = analyze(load_capture(builder.write()))
    keys = [f.key for f in a.findings if f.severity != "info"]
    assert a.verdict == "DEGRADED" and "KV_CACHE_PRESSURE" in keys, keys
    # LOG_SIGNATURE (a warning too) is dated by its own first line; the verdict's since is
    # the earliest of the findings that set it, each by its own evidence
    assert a.since is not None and a.since.at in (T0 - 500, T0 - 100)


def test_parse_since() -> None:
    assert parse_since("30m").at(1000.0 + 1800) == 1000.0
    assert parse_since("2026-12-04T16:47:00Z").epoch == parse_since("2026-12-04 16:47:00").epoch
    assert parse_since("2026-12-04T18:47:00+02:00").epoch == parse_since("2026-12-04T16:47:00Z").epoch
    res = CliRunner().invoke(main, ["analyze", ".", "--since", "yesterday"])
    assert res.exit_code == 2 and "neither a duration" in res.output
