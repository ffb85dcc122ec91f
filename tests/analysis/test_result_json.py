"""analysis.json <-> Analysis: a faithful round trip, and a BundleError for every bad shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdforensics.analysis.findings import Analysis, Evidence, Finding, Skipped
from pdforensics.analysis.result_json import (
    analysis_from_json,
    analysis_json,
    read_analysis,
    write_analysis,
)
from pdforensics.errors import BundleError

SAMPLE = Analysis(
    "WEDGED",
    (Finding("DECODE_TRANSFER_STUCK", "critical", "transfer queue frozen",
             (Evidence("d0", "/metrics", "queue 14 -> 14", "raw/d0/m.http"), "a plain line"),
             "check the prefill side", section="pd_queues", wedge=True, rank=5),
     Finding("KV_CACHE_PRESSURE", "info", "kv 0.93", (), "")),
    (Skipped("GPU_XID", "no kernel log"),), "WEDGED: frozen", ("py-spy stacks",))


def test_round_trip_through_disk(tmp_path: Path) -> None:
    write_analysis(tmp_path, SAMPLE)
    assert read_analysis(tmp_path) == SAMPLE
    assert analysis_from_json(json.loads(json.dumps(analysis_json(SAMPLE)))) == SAMPLE


def test_absent_file_is_none(tmp_path: Path) -> None:
    assert read_analysis(tmp_path) is None


def _doc(**changes: Any) -> dict[str, Any]:
    doc = analysis_json(SAMPLE)
    doc.update(changes)
    return doc


BAD = {
    "not an object": [1, 2],
    "verdict missing": {k: v for k, v in _doc().items() if k != "verdict"},
    "verdict unknown": _doc(verdict="FINE"),
    "verdict a number": _doc(verdict=3),
    "findings a dict": _doc(findings={"a": 1}),
    "finding a string": _doc(findings=["x"]),
    "severity unknown": _doc(findings=[{**analysis_json(SAMPLE)["findings"][0], "severity": "fatal"}]),
    "title missing": _doc(findings=[{k: v for k, v in analysis_json(SAMPLE)["findings"][0].items()
                                     if k != "title"}]),
    "evidence a number": _doc(findings=[{**analysis_json(SAMPLE)["findings"][0], "evidence": [7]}]),
    "wedge a string": _doc(findings=[{**analysis_json(SAMPLE)["findings"][0], "wedge": "yes"}]),
    "rank huge": _doc(findings=[{**analysis_json(SAMPLE)["findings"][0], "rank": 10**30}]),
    "skipped strings": _doc(skipped=["x"]),
    "missing numbers": _doc(missing=[1]),
}


@pytest.mark.parametrize("shape", sorted(BAD))
def test_bad_shapes_are_one_line_bundle_errors(shape: str, tmp_path: Path) -> None:
    (tmp_path / "analysis.json").write_text(json.dumps(BAD[shape]))
    with pytest.raises(BundleError) as err:
        read_analysis(tmp_path)
    assert "\n" not in str(err.value) and "analysis.json" in str(err.value)


def test_not_json_and_deep_nesting(tmp_path: Path) -> None:
    for text in ("{not json", "[" * 100_000 + "]" * 100_000):
        (tmp_path / "analysis.json").write_text(text)
        with pytest.raises(BundleError):
            read_analysis(tmp_path)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=20)


@given(st.dictionaries(st.sampled_from(["verdict", "summary", "findings", "skipped", "missing",
                                        "rules"]), _JSON, max_size=6))
def test_any_json_gives_an_analysis_or_a_bundle_error(doc: dict[str, Any]) -> None:
    try:
        result = analysis_from_json(doc)
    except BundleError as exc:
        assert "\n" not in str(exc)
    else:
        assert result.verdict in ("WEDGED", "DEGRADED", "HEALTHY", "UNKNOWN")
