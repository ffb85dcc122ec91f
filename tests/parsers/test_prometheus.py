"""Prometheus text parser on real-format samples (tests/data/prom_*)."""

from __future__ import annotations

import math
from pathlib import Path

from pdforensics.parsers.prometheus import METRIC_ALIASES, canonical_name, parse_metrics

DATA = Path(__file__).resolve().parent.parent / "data"


def _load(name: str) -> str:
    return (DATA / name).read_text()


def test_sglang_decode_sample_values_and_families() -> None:
    snap = parse_metrics(_load("prom_sglang_decode_wedged.txt"))
    assert snap.bad_lines == ()
    assert not snap.eof
    assert len(snap) == 58
    q = snap.get("sglang:num_queue_reqs")
    assert [s.value for s in q] == [37.0, 37.0]
    assert q[0].labels == (("engine_type", "decode"), ("model_name", "Qwen/Qwen3-8B"),
                           ("pp_rank", "0"), ("tp_rank", "0"))
    assert snap.value_sum("sglang:num_decode_transfer_queue_reqs") == 18.0
    assert snap.value_sum("sglang:num_transfer_failed_reqs_total") == 6.0
    assert snap.get("sglang:num_queue_reqs", tp_rank="1")[0].label("tp_rank") == "1"
    fam = snap.family("sglang:time_to_first_token_seconds")
    assert fam is not None and fam.type == "histogram"
    assert fam.help == "Histogram of time to first token in seconds."
    buckets = snap.get("sglang:time_to_first_token_seconds_bucket", tp_rank="0")
    assert [s.label("le") for s in buckets][-1] == "+Inf"
    assert buckets[-1].value == 5.0 and buckets[0].family == "sglang:time_to_first_token_seconds"
    assert snap.get("sglang:time_to_first_token_seconds_sum", tp_rank="0")[0].value == 354.65
    counter = snap.get("sglang:generation_tokens_total")[0]
    # the 0.0.4 text format declares the counter family with its _total name
    assert counter.family == "sglang:generation_tokens_total" and counter.value == 123456.0
    assert snap.value_sum("sglang:does_not_exist") is None


def test_openmetrics_eof_and_underscored_names() -> None:
    snap = parse_metrics(_load("prom_sglang_openmetrics.txt"))
    assert snap.eof and snap.bad_lines == ()
    # prometheus_client's OpenMetrics writer spells sglang:X as sglang_X: same canonical name
    assert snap.value_sum("sglang:prompt_tokens_total") == 2 * 987654.0
    assert snap.get("sglang:num_running_reqs")[0].name == "sglang_num_running_reqs"
    total = snap.get("sglang:generation_tokens_total")[0]
    assert total.family == "sglang:generation_tokens"  # OpenMetrics: declared without _total
    assert snap.family("sglang:generation_tokens") is not None


def test_router_reexport_and_alias() -> None:
    snap = parse_metrics(_load("prom_router_gateway.txt"))
    assert snap.bad_lines == ()
    assert canonical_name("sglang_num_running_reqs") == "sglang:num_running_reqs"
    assert snap.value_sum("sglang:num_running_reqs") == 64.0
    # old name exported by an old engine, asked for under the new name
    assert "sglang:num_prefill_prealloc_queue_reqs" in METRIC_ALIASES
    hit = snap.get("sglang:num_prefill_bootstrap_queue_reqs", worker="http://127.0.0.1:30001")
    assert [s.value for s in hit] == [12.0]
    assert snap.value_sum("sglang:num_prefill_prealloc_queue_reqs") == 12.0
    assert snap.value_sum("sglang:generation_tokens_total") == 5.5e6
    inf = snap.get("smg_http_request_duration_seconds_bucket", le="+Inf")
    assert inf[0].value == 48228.0
    assert inf[0].family == "smg_http_request_duration_seconds"
    assert snap.get("smg_http_requests_total", status_code="504")[0].value == 17.0


def test_malformed_lines_are_collected_not_fatal() -> None:
    snap = parse_metrics(_load("prom_malformed_mix.txt"))
    assert [b.lineno for b in snap.bad_lines] == [4, 5, 7, 11, 12]
    assert snap.bad_lines[1].line == "this is not a metric line at all"
    assert snap.bad_lines[3].reason == "unknown metric type"
    assert len(snap) == 6
    usage = snap.get("sglang:token_usage")
    assert usage[0].value == 0.5 and usage[0].timestamp == 1764670828000.0
    note = snap.get("sglang:gen_throughput")[0]
    assert math.isnan(note.value)
    assert note.label("note") == 'a "quoted" value\nwith newline'
    assert sorted(s.value for s in snap.get("sglang:cache_hit_rate")) == [-math.inf, math.inf]
    # exemplar stripped, sample kept
    assert snap.get("requests_latency_seconds_bucket", le="1.0")[0].value == 7.0


def test_empty_input() -> None:
    snap = parse_metrics("")
    assert snap.samples == () and snap.bad_lines == () and snap.families == ()
    assert parse_metrics("\n\n  \n").samples == ()


def test_text_after_eof_is_flagged() -> None:
    snap = parse_metrics("a 1\n# EOF\nb 2\n")
    assert [s.name for s in snap] == ["a"]
    assert snap.bad_lines[0].reason == "text after # EOF"


def test_fifty_thousand_samples() -> None:
    """Correct at scale; its speed is measured in benchmarks/bench_prometheus.py, not here."""
    lines = ["# TYPE sglang:time_to_first_token_seconds histogram"]
    for i in range(50_000):
        lines.append(
            f'sglang:time_to_first_token_seconds_bucket{{engine_type="decode",'
            f'model_name="Qwen/Qwen3-8B",tp_rank="{i % 8}",le="{i % 13}.0"}} {i}.0'
        )
    snap = parse_metrics("\n".join(lines))
    assert len(snap) == 50_000 and snap.bad_lines == ()
    assert snap.samples[-1].value == 49_999.0
