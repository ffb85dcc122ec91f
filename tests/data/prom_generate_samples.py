"""Regenerate tests/data/prom_sglang_*.txt with prometheus_client (the exporter SGLang uses).

Run from the repository root: .venv/bin/python tests/data/prom_generate_samples.py
prom_router_gateway.txt and prom_malformed_mix.txt are hand-written (router exporter shape:
no HELP, integer values; sglang_X re-exports; an old metric name).
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as om_latest


def engine(role, frozen):
    reg = CollectorRegistry()
    labels = ["model_name", "engine_type", "tp_rank", "pp_rank"]
    gauges = ["num_running_reqs", "num_used_tokens", "token_usage", "gen_throughput",
              "num_queue_reqs", "num_grammar_queue_reqs", "cache_hit_rate", "utilization",
              "num_retracted_reqs", "num_prefill_bootstrap_queue_reqs", "num_prefill_inflight_queue_reqs",
              "num_decode_prealloc_queue_reqs", "num_decode_transfer_queue_reqs", "prealloc_full_token_usage"]
    g = {
        n: Gauge("sglang:" + n, f"The {n.replace('_', ' ')}.", labels,
                 multiprocess_mode="mostrecent", registry=reg)
        for n in gauges
    }
    c = {n: Counter("sglang:" + n, f"Number of {n.replace('_', ' ')}.", labels, registry=reg) for n in
         ["prompt_tokens", "generation_tokens", "realtime_tokens", "num_requests", "num_aborted_requests",
          "num_transfer_failed_reqs", "num_bootstrap_failed_reqs", "forward_execution_seconds",
          "scheduler_idle_seconds"]}
    h = Histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels,
                  buckets=[0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300], registry=reg)
    for tp in range(2):
        lv = dict(model_name="Qwen/Qwen3-8B", engine_type=role, tp_rank=str(tp), pp_rank="0")
        g["num_running_reqs"].labels(**lv).set(0 if frozen else 12)
        g["num_used_tokens"].labels(**lv).set(0 if frozen else 40960)
        g["token_usage"].labels(**lv).set(0.0 if frozen else 0.31)
        g["num_queue_reqs"].labels(**lv).set(37 if frozen else 0)
        g["num_prefill_bootstrap_queue_reqs"].labels(**lv).set(5 if role == "prefill" and frozen else 0)
        g["num_decode_transfer_queue_reqs"].labels(**lv).set(9 if role == "decode" and frozen else 0)
        c["generation_tokens"].labels(**lv).inc(123456)
        c["prompt_tokens"].labels(**lv).inc(987654)
        c["num_transfer_failed_reqs"].labels(**lv).inc(3 if frozen else 0)
        c["forward_execution_seconds"].labels(**lv).inc(812.25)
        for v in (0.05, 0.3, 0.3, 4.0, 350.0):
            h.labels(**lv).observe(v)
    return reg

open("tests/data/prom_sglang_decode_wedged.txt", "wb").write(generate_latest(engine("decode", True)))
open("tests/data/prom_sglang_prefill_healthy.txt", "wb").write(generate_latest(engine("prefill", False)))
open("tests/data/prom_sglang_openmetrics.txt", "wb").write(om_latest(engine("prefill", False)))
