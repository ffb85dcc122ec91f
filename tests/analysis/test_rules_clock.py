"""CLOCK_SKEW and the clock offset reading (synthetic bundles through the real BundleWriter)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdforensics.analysis.engine import analyze
from pdforensics.errors import ParseError
from pdforensics.parsers.clock import parse_epoch
from pdforensics.views.loaded import load_capture
from tests.support.bundles import T0

GEN = "sglang:generation_tokens_total"


def _bundle(builder: Any, offsets: dict[str, float]) -> Any:
    for i, (host, off) in enumerate(offsets.items()):
        builder.add(host=host, role="decode", port=10 + i,
                    samples=[{GEN: 1000 + 500 * j, "sglang:num_running_reqs": 1} for j in range(3)])
        # the result is written as started at T0 and lasting 0.1 s: its midpoint is T0 + 0.05
        builder.host_outputs[(host, "clock")] = (f"{T0 + 0.05 + off:.6f}\n", "txt")
    return load_capture(builder.write())


def test_offset_is_the_value_minus_the_round_trip_midpoint(builder: Any) -> None:
    cap = _bundle(builder, {"a": 0.0, "b": -2.5})
    offs = {h.name: h.clock_offset_s for h in cap.hosts}
    assert offs["a"] == pytest.approx(0.0, abs=1e-3)
    assert offs["b"] == pytest.approx(-2.5, abs=1e-3)


def test_clock_skew_over_one_second_is_a_finding(builder: Any) -> None:
    a = analyze(_bundle(builder, {"a": 0.3, "b": 4.0}))
    (f,) = [f for f in a.findings if f.key == "CLOCK_SKEW"]
    assert f.subject == "b" and f.title == "b: clock ahead by 4.0 s" and f.severity == "warning"
    assert "+4.000 s" in str(f.evidence[0])


def test_no_finding_within_a_second(builder: Any) -> None:
    a = analyze(_bundle(builder, {"a": 0.9, "b": -0.9}))
    assert "CLOCK_SKEW" not in [f.key for f in a.findings]
    assert a.verdict == "HEALTHY"


def test_parse_epoch() -> None:
    assert parse_epoch("") is None
    assert parse_epoch("1800000000.123456789\n") == pytest.approx(1800000000.123456789)
    with pytest.raises(ParseError):
        parse_epoch("Thu Dec  3 12:09:56 UTC 2026\n")


@pytest.mark.property
@given(st.text(max_size=60))
def test_parse_epoch_never_crashes(text: str) -> None:
    try:
        v = parse_epoch(text)
    except ParseError:
        return
    assert v is None or v >= 0
