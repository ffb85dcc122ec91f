"""Verdict, ordering, skipping and JSON on small synthetic bundles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pdforensics.analysis.engine import analysis_json, analyze, analyze_path, format_analysis_text
from pdforensics.analysis.findings import RULES, Finding, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.views.loaded import load_capture

GEN = "sglang:generation_tokens_total"
FWD = "sglang:forward_execution_seconds_total"


def progressing(i: int, **extra: object) -> dict[str, object]:
    return {GEN: 1000 + 500 * i, FWD: 50.0 + 1.5 * i, "sglang:num_running_reqs": 20,
            "sglang:token_usage": 0.4, **extra}


def frozen(**extra: object) -> dict[str, object]:
    return {GEN: 1000, FWD: 50.0, "sglang:num_running_reqs": 20, "sglang:token_usage": 0.4,
            **extra}


def run(b: Any) -> Any:
    return analyze(load_capture(b.write()))


def test_progressing_pd_pair_is_healthy(builder: Any) -> None:
    builder.add(host="p", role="prefill", port=1, samples=[progressing(i) for i in range(3)])
    builder.add(host="d", role="decode", port=2, samples=[progressing(i) for i in range(3)])
    a = run(builder)
    assert a.verdict == "HEALTHY", a.summary
    assert not [f for f in a.findings if f.severity != "info"]


def test_frozen_counters_with_work_are_wedged(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen() for _ in range(3)])
    a = run(builder)
    assert a.verdict == "WEDGED"
    f = next(f for f in a.findings if f.key == "REQUESTS_FROZEN")
    assert f.severity == "critical" and f.wedge
    text = " ".join(str(e) for e in f.evidence)
    assert "num_running_reqs 20 → 20 → 20 over 4.0 s" in text
    assert "generation_tokens_total 1000 → 1000 → 1000" in text


def test_frozen_counters_without_work_are_idle_not_wedged(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2,
                samples=[frozen(**{"sglang:num_running_reqs": 0}) for _ in range(3)])
    a = run(builder)
    assert a.verdict == "HEALTHY", a.summary
    assert "REQUESTS_FROZEN" not in [f.key for f in a.findings]


def test_one_scrape_never_wedged(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2,
                samples=[frozen(**{"sglang:num_decode_transfer_queue_reqs": 14})])
    a = run(builder)
    assert a.verdict in ("UNKNOWN", "DEGRADED")
    skipped = {s.rule: s.reason for s in a.skipped}
    assert "one scrape" in skipped["REQUESTS_FROZEN"]
    assert "DECODE_TRANSFER_STUCK" in skipped
    assert any("second /metrics sample" in m for m in a.missing)


def test_samples_too_close_are_not_judged(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, interval=0.2,
                samples=[frozen() for _ in range(3)])
    a = run(builder)
    assert a.verdict != "WEDGED"


def test_overloaded_but_progressing_is_not_wedged(builder: Any) -> None:
    samples = [progressing(i, **{"sglang:num_queue_reqs": 300 + 40 * i,
                                 "sglang:num_decode_prealloc_queue_reqs": 80 + 20 * i,
                                 "sglang:num_decode_transfer_queue_reqs": 30 + 5 * i,
                                 "sglang:token_usage": 0.97,
                                 "sglang:num_retracted_reqs": 4,
                                 "sglang:num_retracted_requests_total": 100 + 10 * i})
               for i in range(3)]
    builder.add(host="d", role="decode", port=2, samples=samples)
    a = run(builder)
    assert a.verdict == "DEGRADED", a.summary
    assert [f.key for f in a.findings if f.severity == "critical"] == []
    assert "KV_CACHE_PRESSURE" in [f.key for f in a.findings]


def test_no_metrics_is_unknown_and_says_what_is_missing(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[])
    builder.unreachable.append("p")
    a = run(builder)
    assert a.verdict == "UNKNOWN"
    assert any("host p unreachable" in m for m in a.missing)
    assert any("/metrics from d decode:2" in m for m in a.missing)


def test_specific_cause_sorts_first(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2,
                samples=[frozen(**{"sglang:num_decode_transfer_queue_reqs": 14})
                         for _ in range(3)])
    a = run(builder)
    order = [f.key for f in a.findings]
    assert order[0] == "DECODE_TRANSFER_STUCK"
    assert order.index("DECODE_TRANSFER_STUCK") < order.index("REQUESTS_FROZEN")


def test_dead_rank_sorts_first(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, ranks=("TP0",),
                samples=[frozen(**{"sglang:num_decode_transfer_queue_reqs": 3})
                         for _ in range(3)])
    a = run(builder)
    assert a.findings[0].key == "PROCESS_STATE"
    assert a.findings[0].wedge and "1 of 2 scheduler ranks" in a.findings[0].title


@pytest.fixture
def crashing_rule() -> Iterator[None]:
    @rule("TEST_CRASH", rank=1)
    def crash(ctx: Context) -> list[Finding]:
        raise ZeroDivisionError("boom")

    yield
    del RULES["TEST_CRASH"]


def test_a_crashing_rule_becomes_skipped(builder: Any, crashing_rule: None) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen() for _ in range(3)])
    a = run(builder)
    reason = next(s.reason for s in a.skipped if s.rule == "TEST_CRASH")
    assert "ZeroDivisionError: boom" in reason
    assert a.verdict == "WEDGED"  # the other rules still ran


def test_analyze_path_writes_json(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen() for _ in range(3)])
    path = builder.write()
    from pdforensics.analysis.result_json import analysis_from_json, analysis_json, read_analysis

    result = analyze_path(path)
    doc = analysis_json(result)
    on_disk = json.loads((Path(path) / "analysis.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert read_analysis(Path(path)) == result == analysis_from_json(on_disk)
    assert doc["verdict"] == "WEDGED"
    f = doc["findings"][0]
    assert set(f) >= {"key", "severity", "title", "evidence", "next_step"}
    assert f["evidence"][0]["path"] == "raw/d/metrics.decode.2.s3.http"
    assert all(set(s) == {"rule", "reason"} for s in doc["skipped"])


def test_text_output(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen()])
    a = run(builder)
    text = format_analysis_text(a)
    assert text.startswith(f"VERDICT: {a.verdict}\n")
    assert "Missing evidence:" in text and "Skipped rules:" in text
    assert analysis_json(a)["missing"] == list(a.missing)


def test_a_misspelt_need_fails_at_import() -> None:
    """A rule's needs are checked names: a typo raises when the rule is declared, instead of
    the engine silently running the rule without the check."""
    with pytest.raises(ValueError, match="metrix"):
        rule("TEST_TYPO_NEED", needs=("metrix",))  # type: ignore[arg-type]
    assert "TEST_TYPO_NEED" not in RULES


def test_every_need_has_a_check_and_every_rule_need_is_one() -> None:
    from pdforensics.analysis.findings import Need
    from pdforensics.analysis.rules.context import NEEDS

    assert set(NEEDS) == set(Need)
    assert all(isinstance(n, Need) for r in RULES.values() for n in r.needs)
