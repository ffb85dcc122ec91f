"""Prometheus metrics of the stand-in server: ONE table of every name it exports.

Names, types and labels follow sglang 0.5.x (python/sglang/srt/metrics/collector.py).
Each row: (name, type, help, state key or None, extra labels, scope). Scope "rank" means
one series per tp rank (scheduler collector), "server" means one series per server
(tokenizer collector, labelled without tp_rank as real sglang does).
"""

from __future__ import annotations

import time

# (name, type, help, series: list of (extra labels, state key), scope)
METRICS: tuple[tuple[str, str, str, tuple[tuple[tuple[tuple[str, str], ...], str], ...], str], ...] = (
    ("sglang:num_running_reqs", "gauge", "The number of running requests.", (((), "running"),), "rank"),
    ("sglang:num_used_tokens", "gauge", "The number of used tokens.", (((), "used_tokens"),), "rank"),
    ("sglang:token_usage", "gauge", "The token usage.", (((), "token_usage"),), "rank"),
    (
        "sglang:pending_prealloc_token_usage",
        "gauge",
        "The token usage for pending preallocated tokens (not preallocated yet).",
        (((), "pending_prealloc_token_usage"),),
        "rank",
    ),
    ("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", (((), "gen_throughput"),), "rank"),
    ("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", (((), "queue"),), "rank"),
    (
        "sglang:num_grammar_queue_reqs",
        "gauge",
        "The number of requests in the grammar waiting queue.",
        (((), "zero"),),
        "rank",
    ),
    ("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.", (((), "cache_hit_rate"),), "rank"),
    (
        "sglang:max_total_num_tokens",
        "gauge",
        "Maximum total number of tokens in the KV cache pool.",
        (((), "max_total_num_tokens"),),
        "rank",
    ),
    ("sglang:num_retracted_reqs", "gauge", "The number of retracted requests.", (((), "retracted"),), "rank"),
    (
        "sglang:num_retracted_requests_total",
        "counter",
        "Total number of retracted requests.",
        (((), "retracted_total"),),
        "rank",
    ),
    ("sglang:num_paused_reqs", "gauge", "The number of paused requests by async weight sync.", (((), "zero"),), "rank"),
    (
        "sglang:num_prefill_bootstrap_queue_reqs",
        "gauge",
        "The number of requests in the prefill bootstrap queue.",
        (((), "prefill_bootstrap_q"),),
        "rank",
    ),
    (
        "sglang:num_prefill_inflight_queue_reqs",
        "gauge",
        "The number of requests in the prefill inflight queue.",
        (((), "prefill_inflight_q"),),
        "rank",
    ),
    (
        "sglang:num_decode_prealloc_queue_reqs",
        "gauge",
        "The number of requests in the decode prealloc queue.",
        (((), "decode_prealloc_q"),),
        "rank",
    ),
    (
        "sglang:num_decode_transfer_queue_reqs",
        "gauge",
        "The number of requests in the decode transfer queue.",
        (((), "decode_transfer_q"),),
        "rank",
    ),
    (
        "sglang:num_bootstrap_failed_reqs_total",
        "counter",
        "The number of bootstrap failed requests.",
        (((), "bootstrap_failed"),),
        "rank",
    ),
    (
        "sglang:num_transfer_failed_reqs_total",
        "counter",
        "The number of transfer failed requests.",
        (((), "transfer_failed"),),
        "rank",
    ),
    (
        "sglang:kv_transfer_speed_gb_s",
        "gauge",
        "The transfer speed of the KV cache in GB/s.",
        (((), "kv_speed"),),
        "rank",
    ),
    (
        "sglang:kv_transfer_latency_ms",
        "gauge",
        "The transfer latency of the KV cache in ms.",
        (((), "kv_latency"),),
        "rank",
    ),
    ("sglang:utilization", "gauge", "The utilization.", (((), "utilization"),), "rank"),
    (
        "sglang:engine_startup_time",
        "gauge",
        "The time taken for the engine to start up.",
        (((), "startup_time"),),
        "rank",
    ),
    ("sglang:is_cuda_graph", "gauge", "Whether the batch is using CUDA graph.", (((), "cuda_graph"),), "rank"),
    ("sglang:new_token_ratio", "gauge", "The new token ratio.", (((), "new_token_ratio"),), "rank"),
    (
        "sglang:realtime_tokens_total",
        "counter",
        "Total number of tokens processed (updated on each log interval). "
        "mode: prefill_compute, prefill_cache, decode.",
        (
            ((("mode", "prefill_compute"),), "rt_prefill_compute"),
            ((("mode", "prefill_cache"),), "rt_prefill_cache"),
            ((("mode", "decode"),), "rt_decode"),
        ),
        "rank",
    ),
    (
        "sglang:scheduler_idle_seconds_total",
        "counter",
        "Total time the scheduler spent idle.",
        (((), "idle_seconds"),),
        "rank",
    ),
    (
        "sglang:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        (((), "prompt_tokens"),),
        "server",
    ),
    (
        "sglang:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        (((), "generation_tokens"),),
        "server",
    ),
    ("sglang:cached_tokens_total", "counter", "Number of cached prompt tokens.", (((), "rt_prefill_cache"),), "server"),
    ("sglang:num_requests_total", "counter", "Number of requests processed.", (((), "num_requests"),), "server"),
    ("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.", (((), "aborted"),), "server"),
    (
        "sglang:time_to_first_token_seconds",
        "histogram",
        "Histogram of time to first token in seconds.",
        (((), "num_requests"),),
        "server",
    ),
    (
        "sglang:e2e_request_latency_seconds",
        "histogram",
        "Histogram of End-to-end request latency in seconds",
        (((), "num_requests"),),
        "server",
    ),
)

HISTOGRAM_BUCKETS = {
    "sglang:time_to_first_token_seconds": (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400),
    "sglang:e2e_request_latency_seconds": (
        0.1,
        0.2,
        0.4,
        0.6,
        0.8,
        1,
        2,
        4,
        6,
        8,
        10,
        20,
        40,
        60,
        80,
        100,
        200,
        400,
        600,
        1200,
        1800,
        2400,
    ),
}
# typical latency of one request per histogram (seconds), used to spread counts over buckets
_TYPICAL = {"sglang:time_to_first_token_seconds": 0.7, "sglang:e2e_request_latency_seconds": 9.0}

METRIC_NAMES: tuple[str, ...] = tuple(row[0] for row in METRICS)
# As in the real 0.5.23: these labelled counters have no series until their first event (a
# missing series means zero), and sglang:forward_execution_seconds_total does not exist.
ABSENT_UNTIL_FIRST = ("sglang:num_bootstrap_failed_reqs_total", "sglang:num_transfer_failed_reqs_total",
                      "sglang:num_retracted_requests_total")
# The HTTP server's own gauge, one series per endpoint it has served; the scrape that reads it
# counts itself (1 on /metrics in every real scrape).
HTTP_ENDPOINTS = ("/model_info", "/generate", "/health", "/v1/models", "/server_info", "/v1/loads",
                  "/health_generate", "/metrics")


def _labels(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


def _fmt(value: float) -> str:
    return repr(float(value))


def _histogram_lines(name: str, base: list[tuple[str, str]], count: float) -> list[str]:
    out = []
    typical = _TYPICAL[name]
    cumulative = 0.0
    for le in HISTOGRAM_BUCKETS[name]:
        # a deterministic bell-ish share: most requests land in the buckets around `typical`
        share = 1.0 if le >= typical * 4 else (0.9 if le >= typical * 2 else (0.5 if le >= typical else 0.05))
        cumulative = max(cumulative, float(int(count * share)))
        out.append(f"{name}_bucket{_labels(base + [('le', str(float(le)))])} {_fmt(cumulative)}")
    out.append(f"{name}_bucket{_labels(base + [('le', '+Inf')])} {_fmt(count)}")
    out.append(f"{name}_count{_labels(base)} {_fmt(count)}")
    out.append(f"{name}_sum{_labels(base)} {_fmt(count * typical)}")
    return out


def _http_lines(held: int) -> list[str]:
    name = "sglang:http_requests_active"
    out = [f"# HELP {name} Number of currently active HTTP requests", f"# TYPE {name} gauge"]
    for ep in HTTP_ENDPOINTS:
        value = 1 if ep == "/metrics" else held if ep == "/generate" else 0
        method = "POST" if ep == "/generate" else "GET"
        out.append(f'{name}{{endpoint="{ep}",method="{method}"}} {_fmt(value)}')
    return out


def render(role: str, model_name: str, ranks: list[dict], held: int = 0) -> str:
    """Prometheus text exposition for one server from its ranks' published states; `held`:
    /generate requests the server holds open (a request fault's stranded ones)."""
    engine = role if role in ("prefill", "decode") else "unified"
    lines: list[str] = []
    first = ranks[0] if ranks else None
    for name, mtype, help_text, series, scope in METRICS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {mtype}")
        targets = ranks if scope == "rank" else ([first] if first else [])
        for state in targets:
            base = [("engine_type", engine), ("model_name", model_name)]
            if scope == "rank":
                base += [("moe_ep_rank", "0"), ("pp_rank", "0"), ("tp_rank", str(state["tp_rank"])), ("dp_rank", "0")]
            for extra, key in series:
                value = float(state.get(key, 0.0)) if key != "zero" else 0.0
                if scope == "server" and key in (
                    "prompt_tokens",
                    "generation_tokens",
                    "num_requests",
                    "rt_prefill_cache",
                    "aborted",
                ):
                    value = float(sum(float(s.get(key, 0.0)) for s in ranks[:1]))
                if mtype == "histogram":
                    lines.extend(_histogram_lines(name, base, value))
                elif name in ABSENT_UNTIL_FIRST and value <= 0:
                    continue
                else:
                    lines.append(f"{name}{_labels(base + list(extra))} {_fmt(value)}")
    return "\n".join(lines + _http_lines(held) + _planted_lines(engine, model_name)) + "\n"


def _planted_lines(engine: str, model_name: str) -> list[str]:
    """An info gauge carrying the labels a test planted (nothing in a normal lab)."""
    from pdfx_lab_runtime import planted

    labels = planted().get("labels") or {}
    if not labels:
        return []
    pairs = [("engine_type", engine), ("model_name", model_name)]
    pairs += [(str(k), str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))
              for k, v in labels.items()]
    return ["# HELP sglang:lab_planted_info Labels planted by a lab test.", "# TYPE sglang:lab_planted_info gauge",
            f"sglang:lab_planted_info{_labels(pairs)} 1"]


def now() -> float:
    return time.time()
