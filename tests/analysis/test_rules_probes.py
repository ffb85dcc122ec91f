"""SCHEDULER_PROBE_HANG on synthetic bundles (the real BundleWriter, tests/support/builder.py)."""

from __future__ import annotations

from typing import Any

from pdforensics.analysis.engine import analyze
from pdforensics.views.loaded import load_capture

GEN = "sglang:generation_tokens_total"


def moving(i: int) -> dict[str, object]:
    return {GEN: 1000 + 500 * i, "sglang:num_running_reqs": 5}


def frozen() -> dict[str, object]:
    return {GEN: 1000, "sglang:num_running_reqs": 5}


def keys(a: Any) -> list[str]:
    return [f.key for f in a.findings]


def test_probe_timeout_with_health_200_is_a_finding(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                probe="timeout")
    a = analyze(load_capture(builder.write()))
    (f,) = [f for f in a.findings if f.key == "SCHEDULER_PROBE_HANG"]
    assert f.severity == "critical" and not f.wedge  # progress moves: not proof of a wedge
    assert f.title == "d decode:2: /health_generate hangs while /health answers"
    text = [str(e) for e in f.evidence]
    assert any("/health_generate" in t and "timed out" in t for t in text)
    assert any("/health" in t and "status 200" in t for t in text)
    assert any("progress moving" in t for t in text)
    assert str(f.evidence[1].path).endswith("health.decode.2.http")  # type: ignore[union-attr]
    assert a.verdict == "DEGRADED" and a.findings[0].key == "SCHEDULER_PROBE_HANG"


def test_probe_hang_with_frozen_counters_is_a_wedge(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen()] * 3, probe="timeout")
    a = analyze(load_capture(builder.write()))
    (f,) = [f for f in a.findings if f.key == "SCHEDULER_PROBE_HANG"]
    assert f.wedge and f.title.endswith("and the counters are frozen")
    assert a.verdict == "WEDGED"


def test_sglang_giving_up_503_counts_as_a_failed_probe(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)], probe="503")
    a = analyze(load_capture(builder.write()))
    (f,) = [f for f in a.findings if f.key == "SCHEDULER_PROBE_HANG"]
    assert "status 503" in str(f.evidence[0])


def test_answered_probe_is_no_finding(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)], probe="ok")
    a = analyze(load_capture(builder.write()))
    assert "SCHEDULER_PROBE_HANG" not in keys(a)
    assert not any(s.rule == "SCHEDULER_PROBE_HANG" for s in a.skipped)
    assert a.verdict == "HEALTHY"


def test_no_probe_skips_the_rule_with_the_reason(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)])
    a = analyze(load_capture(builder.write()))
    (s,) = [s for s in a.skipped if s.rule == "SCHEDULER_PROBE_HANG"]
    assert "--no-probes" in s.reason


def test_probe_hang_folds_into_the_server_info_hang_of_the_same_server(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen()] * 3, probe="timeout",
                server_info="timeout")
    builder.add(host="p", role="prefill", port=1, samples=[moving(i) for i in range(3)],
                probe="timeout")
    a = analyze(load_capture(builder.write()))
    (hang,) = [f for f in a.findings if f.key == "SCHEDULER_ENDPOINT_HANG"]
    assert hang.merged == ("SCHEDULER_PROBE_HANG",)
    assert any("/health_generate" in str(e) for e in hang.evidence)
    # the prefill server has no /server_info hang: its probe finding stays on its own
    probes = [f for f in a.findings if f.key == "SCHEDULER_PROBE_HANG"]
    assert [f.subject for f in probes] == ["p prefill:1"]
    assert keys(a).index("SCHEDULER_ENDPOINT_HANG") < keys(a).index("SCHEDULER_PROBE_HANG")


def test_ready_503_is_a_finding_and_a_report_row(builder: Any) -> None:
    """/ready (a source added in one declaration): 503 while the probe still answers is SGLang
    keeping new requests from the server; the finding names both, the topology row says so."""
    from pdforensics.report.topology import build_topology

    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)], probe="ok",
                raw_fetches={"ready": (503, "")})
    builder.add(host="p", role="prefill", port=1, samples=[moving(i) for i in range(3)], probe="ok",
                raw_fetches={"ready": (200, "")})
    capture = load_capture(builder.write())
    a = analyze(capture)
    (f,) = [f for f in a.findings if f.key == "SERVER_NOT_READY"]
    assert f.severity == "critical" and not f.wedge and f.subject == "d decode:2"
    assert f.title == "d decode:2: /ready answers 503: the server takes no new requests"
    text = [str(e) for e in f.evidence]
    assert "/ready" in text[0] and "status 503" in text[0]
    assert any("/health_generate" in t and "status 200" in t for t in text)
    assert str(f.evidence[0].path).endswith("ready.decode.2.http")  # type: ignore[union-attr]
    assert "/continue_generation" in f.next_step and a.verdict == "DEGRADED"
    nodes = {n.role: dict(n.queues) for n in build_topology(capture)[0].nodes}
    assert nodes["decode"]["ready"] == "no (HTTP 503)" and nodes["prefill"]["ready"] == "yes"


def test_an_older_server_without_ready_is_no_finding(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)], probe="ok",
                raw_fetches={"ready": (404, "")})
    capture = load_capture(builder.write())
    assert "SERVER_NOT_READY" not in keys(analyze(capture))
    from pdforensics.report.topology import build_topology

    assert "ready" not in dict(build_topology(capture)[0].nodes[0].queues)
