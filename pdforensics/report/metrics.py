"""Metrics: per server, the key PD gauges and counters per sample, deltas, sparklines.

Values are read as the analysis reads them (metrics_view): a gauge is the max over tp ranks
summed over dp ranks, a counter the sum of every series.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from pdforensics.analysis.metrics_view import counter, gauge
from pdforensics.report import svg
from pdforensics.report.common import fetch_state, hms, num, service_id
from pdforensics.views.loaded import LoadedCapture, ServiceView

#: (metric, kind) shown for SGLang servers, in order. "progress" counters must rise.
SERVER_METRICS: tuple[tuple[str, str], ...] = (
    ("sglang:num_running_reqs", "gauge"),
    ("sglang:num_queue_reqs", "gauge"),
    ("sglang:num_prefill_bootstrap_queue_reqs", "gauge"),
    ("sglang:num_prefill_inflight_queue_reqs", "gauge"),
    ("sglang:num_decode_prealloc_queue_reqs", "gauge"),
    ("sglang:num_decode_transfer_queue_reqs", "gauge"),
    ("sglang:token_usage", "gauge"),
    ("sglang:num_retracted_reqs", "gauge"),
    ("sglang:pending_prealloc_token_usage", "gauge"),
    ("sglang:gen_throughput", "gauge"),
    ("sglang:generation_tokens_total", "progress"),
    ("sglang:realtime_tokens_total", "progress"),
    ("sglang:prompt_tokens_total", "progress"),
    ("sglang:forward_execution_seconds_total", "progress"),
    ("sglang:scheduler_idle_seconds_total", "counter"),
    ("sglang:num_requests_total", "counter"),
    ("sglang:num_transfer_failed_reqs_total", "counter"),
    ("sglang:num_bootstrap_failed_reqs_total", "counter"),
    ("sglang:num_aborted_requests_total", "counter"),
    ("sglang:num_retracted_requests_total", "counter"),
)
ROUTER_METRICS: tuple[tuple[str, str], ...] = (
    ("smg_worker_requests_active", "gauge"),
    ("smg_http_connections_active", "gauge"),
    ("smg_worker_health", "gauge"),
    ("smg_router_requests_total", "progress"),
    ("smg_http_requests_total", "progress"),
    ("smg_http_responses_total", "counter"),
    ("smg_router_request_errors_total", "counter"),
    ("sgl_router_requests_total", "progress"),
    ("sgl_router_request_errors_total", "counter"),
)
_ERROR_WORDS = ("fail", "error", "abort", "retract")


@dataclass(frozen=True)
class MetricRow:
    name: str
    kind: str  # gauge | counter | progress
    values: tuple[str, ...]
    delta: str
    rate: str
    spark: Markup
    frozen: bool  # a counter that did not move across the samples
    rising_bad: bool  # an error counter that rose
    zero: bool = False  # every sample read 0: folded under the table


@dataclass(frozen=True)
class SampleHead:
    label: str
    state: str
    words: str


@dataclass(frozen=True)
class ServiceMetrics:
    anchor: str
    title: str
    samples: tuple[SampleHead, ...]
    rows: tuple[MetricRow, ...]
    note: str | None
    frozen: int
    labels: tuple[str, ...]  # the series' own labels (model, engine type), ranks left out


def _row(name: str, kind: str, s: ServiceView) -> MetricRow | None:
    read = gauge if kind == "gauge" else counter
    vals = [read(m.snapshot, name) if m.snapshot is not None else None for m in s.metrics]
    known = [v for v in vals if v is not None]
    if not known:
        return None
    good = [(m.taken_at, v) for m, v in zip(s.metrics, vals, strict=True) if v is not None]
    delta = rate = None
    if len(good) >= 2:
        delta = good[-1][1] - good[0][1]
        span = good[-1][0] - good[0][0]
        rate = delta / span if span > 0 else None
    is_counter = kind in ("counter", "progress")
    bad = kind == "counter" and any(w in name for w in _ERROR_WORDS)
    frozen = is_counter and not bad and delta == 0
    return MetricRow(
        name=name, kind=kind, values=tuple(num(v) for v in vals),
        delta=("+" if delta and delta > 0 else "") + num(delta) if delta is not None else "—",
        rate=f"{num(rate)}/s" if rate is not None and is_counter else "—",
        spark=svg.sparkline(vals, frozen=frozen), frozen=frozen,
        rising_bad=bool(bad and delta is not None and delta > 0),
        zero=all(v == 0 for v in known))


_RANK_LABELS = frozenset({"tp_rank", "dp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank",
                          "attn_dp_rank"})


def _labels(s: ServiceView, table: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """Distinct ``key=value`` labels of the shown series in the last good sample."""
    good = s.good_samples
    if not good or good[-1].snapshot is None:
        return ()
    seen: dict[str, None] = {}
    for name, _kind in table:
        for sample in good[-1].snapshot.get(name):
            for k, v in sample.labels:
                if k not in _RANK_LABELS:
                    seen.setdefault(f"{k}={v}", None)
    return tuple(list(seen)[:12])


def _service(s: ServiceView) -> ServiceMetrics:
    table = ROUTER_METRICS if s.kind == "router" else SERVER_METRICS
    heads = []
    for i, m in enumerate(s.metrics, 1):
        state, words = fetch_state(m.fetch)
        if state == "ok" and m.snapshot is None:
            state, words = "bad", "answered, unparseable"
        heads.append(SampleHead(f"s{i} {hms(m.taken_at)}", state, words))
    rows = tuple(r for r in (_row(n, k, s) for n, k in table) if r is not None)
    note = None
    if not s.metrics:
        note = ("no /metrics samples collected" + ("" if s.kind == "router" else
                " (is --enable-metrics set?)"))
    elif not s.good_samples:
        note = "every /metrics scrape failed: " + "; ".join(h.words for h in heads)
    elif len(s.good_samples) < 2:
        note = "only one good sample: no deltas, so frozen counters cannot be told from slow ones"
    return ServiceMetrics(anchor=service_id(s), title=f"{s.role}:{s.port} on {s.host}",
                          samples=tuple(heads), rows=rows, note=note,
                          frozen=sum(1 for r in rows if r.frozen), labels=_labels(s, table))


def build_metrics(capture: LoadedCapture) -> tuple[tuple[ServiceMetrics, ...], list[str]]:
    """One table per server and router, in host order."""
    out = tuple(_service(s) for s in capture.services())
    missing = [f"{m.title}: {m.note}" for m in out if m.note and not m.rows]
    if not out:
        missing.append("no services captured, so no metrics")
    return out, missing
