"""Prometheus history in a bundle: the key PD series over the window before a capture.

Each series is one ``/api/v1/query_range`` call, stored as a raw result
(``raw/prometheus/history.<key>.json``, in the manifest with its URL and sha256) and
normalised into ``parsed/prometheus/history.json`` (format in docs/watch.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.bundle.ondisk import BundleWriter
from pdforensics.capture.deadline import Deadline
from pdforensics.model import CommandResult
from pdforensics.prometheus.api import ApiResponse, prom_duration, query_range

HOST = "prometheus"  # the pseudo-host its results are filed under
SOURCE = "prometheus_query_range"
HISTORY_FILE = "parsed/prometheus/history.json"
FORMAT = 1
MAX_POINTS = 300
RANKS = "tp_rank, pp_rank, moe_ep_rank"


@dataclass(frozen=True)
class SeriesSpec:
    """One chartable series: a PromQL expression (``{w}`` is the rate window)."""

    key: str
    title: str
    kind: str  # gauge | rate
    unit: str
    expr: str

    def query(self, window_s: float) -> str:
        return self.expr.replace("{w}", prom_duration(window_s))


def _gauge(key: str, title: str, names: str, unit: str = "requests") -> SeriesSpec:
    sel = f'{{__name__=~"{names}"}}' if "|" in names else names
    return SeriesSpec(key, title, "gauge", unit, f"max without ({RANKS}) ({sel})")


def _rate(key: str, title: str, names: str, unit: str, fold: str = "",
          match: str = "") -> SeriesSpec:
    sel = f'{{__name__=~"{names}"{match}}}' if "|" in names or match else names
    without = ", ".join(x for x in (RANKS, fold) if x)
    return SeriesSpec(key, title, "rate", unit, f"sum without ({without}) (irate({sel}[{{w}}]))")


#: The key PD series: queues, progress, token usage, transfer failures, router rates.
SERIES: tuple[SeriesSpec, ...] = (
    _gauge("running_reqs", "running requests", "sglang:num_running_reqs"),
    _gauge("queue_reqs", "waiting queue", "sglang:num_queue_reqs"),
    _gauge("prefill_bootstrap_queue", "prefill bootstrap queue",
           "sglang:num_prefill_bootstrap_queue_reqs|sglang:num_prefill_prealloc_queue_reqs"),
    _gauge("prefill_inflight_queue", "prefill inflight (transfer) queue",
           "sglang:num_prefill_inflight_queue_reqs"),
    _gauge("decode_prealloc_queue", "decode prealloc queue", "sglang:num_decode_prealloc_queue_reqs"),
    _gauge("decode_transfer_queue", "decode transfer queue", "sglang:num_decode_transfer_queue_reqs"),
    _gauge("token_usage", "KV cache token usage", "sglang:token_usage", unit="ratio"),
    _gauge("retracted_reqs", "retracted requests", "sglang:num_retracted_reqs"),
    _rate("generation_throughput", "generation tokens/s", "sglang:generation_tokens_total", "tokens/s"),
    _rate("prompt_throughput", "prompt tokens/s", "sglang:prompt_tokens_total", "tokens/s"),
    _rate("realtime_tokens", "tokens processed/s (all modes)", "sglang:realtime_tokens_total",
          "tokens/s", fold="mode"),
    _rate("forward_seconds", "forward-pass seconds/s (GPU busy, summed over ranks)",
          "sglang:forward_execution_seconds_total|sglang:gpu_execution_seconds_total", "s/s",
          fold="category"),
    _rate("transfer_failures", "failed KV transfers/s", "sglang:num_transfer_failed_reqs_total", "1/s"),
    _rate("bootstrap_failures", "failed bootstraps/s", "sglang:num_bootstrap_failed_reqs_total", "1/s"),
    _rate("router_requests", "router requests/s", "smg_router_requests_total|sgl_router_requests_total",
          "requests/s", fold="model, route"),
    _rate("router_http_requests", "router HTTP requests/s (scrapes excluded)",
          "smg_http_requests_total|sgl_router_http_requests_total", "requests/s", fold="method",
          match=', path!="/metrics"'),
    _rate("router_errors", "router request errors/s",
          "smg_router_request_errors_total|sgl_router_request_errors_total", "1/s"),
    SeriesSpec("wedge_suspected", "pdforensics watch: wedge suspected", "gauge", "",
               "pdforensics_wedge_suspected"),
)
QUEUE_KEYS = ("queue_reqs", "prefill_bootstrap_queue", "prefill_inflight_queue",
              "decode_prealloc_queue", "decode_transfer_queue")
THROUGHPUT_KEYS = ("generation_throughput", "prompt_throughput", "realtime_tokens",
                   "router_http_requests")
FAILURE_KEYS = ("transfer_failures", "bootstrap_failures", "router_errors")


def step_for(window_s: float) -> float:
    """Whole seconds between points so a window holds at most MAX_POINTS of them."""
    return float(max(1, math.ceil(window_s / MAX_POINTS)))


def rate_window_for(step_s: float) -> float:
    """irate's range: wide enough to hold two scrapes at a 1-minute scrape interval."""
    return max(4 * step_s, 120.0)


# -- reading the API answers ----------------------------------------------------------------
@dataclass(frozen=True)
class HistoryLine:
    """One labelled line of a series: (epoch seconds, value) points, NaN dropped."""

    labels: tuple[tuple[str, str], ...]
    points: tuple[tuple[float, float], ...]

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)

    @property
    def name(self) -> str:
        """``instance`` (and engine/worker labels), enough to tell lines apart."""
        d = dict(self.labels)
        bits = [d[k] for k in ("instance", "engine_type", "worker", "path", "dp_rank") if d.get(k)]
        return " ".join(bits) or ",".join(f"{k}={v}" for k, v in self.labels) or "(no labels)"


@dataclass(frozen=True)
class HistorySeries:
    key: str
    title: str
    kind: str
    unit: str
    query: str
    raw: str | None  # bundle-relative path of the API answer
    error: str | None
    lines: tuple[HistoryLine, ...]


@dataclass(frozen=True)
class HistoryEvent:
    """A change the history shows: when a queue started to hold, when throughput dropped."""

    key: str
    line: str
    at: float
    text: str


@dataclass(frozen=True)
class History:
    prometheus: str
    start: float
    end: float
    step_s: float
    rate_window_s: float
    series: tuple[HistorySeries, ...]
    events: tuple[HistoryEvent, ...]

    def get(self, key: str) -> HistorySeries | None:
        return next((s for s in self.series if s.key == key), None)


def parse_matrix(data: Any) -> tuple[HistoryLine, ...]:
    """A query_range ``data`` member (resultType matrix) -> lines; anything else -> ()."""
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        return ()
    out = []
    for row in data.get("result") or ():
        if not isinstance(row, dict):
            continue
        metric = row.get("metric") or {}
        points = []
        for pair in row.get("values") or ():
            try:
                t, v = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                continue
            if math.isfinite(v):
                points.append((t, v))
        labels = tuple(sorted((str(k), str(v)) for k, v in metric.items() if k != "__name__"))
        out.append(HistoryLine(labels, tuple(points)))
    return tuple(sorted(out, key=lambda ln: ln.labels))


# -- when did it change ---------------------------------------------------------------------
def _tail_run(points: Sequence[tuple[float, float]], low: float | None = None,
              high: float | None = None) -> int:
    """Index where the final run of points with ``low < v`` / ``v <= high`` begins."""
    i = len(points)
    while i > 0:
        v = points[i - 1][1]
        if (low is not None and not v > low) or (high is not None and not v <= high):
            break
        i -= 1
    return i


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    return 0.0 if not n else (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2)


def line_events(series: HistorySeries) -> list[HistoryEvent]:
    """Onsets in one series: a queue holding at its final level, throughput dropping to
    under a fifth of before, failures starting; only changes inside the window count."""
    out = []
    for line in series.lines:
        pts = line.points
        if len(pts) < 3:
            continue
        last = pts[-1][1]
        if series.key in QUEUE_KEYS and last >= 1:
            i = _tail_run(pts, low=max(1.0, 0.5 * last) - 1e-9)
            if 0 < i < len(pts) - 1:
                out.append(HistoryEvent(series.key, line.name, pts[i][0],
                                        f"{series.title} at {last:g} from here on"))
        elif series.key in THROUGHPUT_KEYS:
            values = sorted(v for _t, v in pts)
            high = values[(3 * len(values)) // 4]
            if high <= 0:
                continue
            i = _tail_run(pts, high=0.2 * high)
            ref = _median([v for _t, v in pts[:i]])
            if 0 < i < len(pts) - 1 and ref > 0 and last <= 0.2 * ref:
                out.append(HistoryEvent(series.key, line.name, pts[i][0],
                                        f"{series.title} dropped from ~{ref:.3g} to {last:.3g}"))
        elif series.key in FAILURE_KEYS and last > 0:
            i = _tail_run(pts, low=0.0)
            if 0 < i < len(pts) - 1:
                out.append(HistoryEvent(series.key, line.name, pts[i][0],
                                        f"{series.title} started ({last:.3g} now)"))
    return out


# -- the capture side -----------------------------------------------------------------------
def _result(resp: ApiResponse) -> CommandResult:
    return CommandResult(host=HOST, source=SOURCE, argv=("GET", resp.url),
                         exit_status=0 if resp.status is not None else None, stdout=resp.body,
                         stderr="", duration_s=resp.duration_s, started_at=resp.started_at,
                         error=resp.error)


def collect_history(writer: BundleWriter, url: str, window_s: float, end: float,
                    deadline: Deadline | None = None, timeout_s: float = 10.0,
                    series: Sequence[SeriesSpec] = SERIES) -> History:
    """Query every series for ``[end - window_s, end]``; add each answer to the bundle
    through the writer and write the normalised history file. Never raises for a
    Prometheus that is down or refuses a query: that is recorded per series."""
    step = step_for(window_s)
    rate_w = rate_window_for(step)
    start = end - window_s
    out = []
    for spec in series:
        query = spec.query(rate_w)
        if deadline is not None and deadline.closed():
            out.append(HistorySeries(spec.key, spec.title, spec.kind, spec.unit, query, None,
                                     "not run: capture deadline reached", ()))
            continue
        resp = query_range(url, query, start, end, step, timeout_s)
        entry = writer.add(_result(resp), key=f"history.{spec.key}", url=resp.url,
                           extension="json", target={"series": spec.key})
        lines = parse_matrix(resp.data()) if resp.ok else ()
        error = resp.error
        if error is None and resp.data() is None:
            error = "Prometheus answered without data"
        out.append(HistorySeries(spec.key, spec.title, spec.kind, spec.unit, query, entry.path,
                                 error, lines))
    events = tuple(e for s in out for e in line_events(s))
    history = History(url, start, end, step, rate_w, tuple(out),
                      tuple(sorted(events, key=lambda e: e.at)))
    writer.write_json(HISTORY_FILE, history_json(history))
    return history


def history_sidecar(url: str, window_s: float, timeout_s: float = 10.0
                    ) -> Callable[[BundleWriter, Deadline], None]:
    """A run_capture sidecar pulling the history for the window before the capture."""

    def run(writer: BundleWriter, deadline: Deadline) -> None:
        collect_history(writer, url, window_s, writer.started_at, deadline, timeout_s)

    return run


# -- the file ---------------------------------------------------------------------------------
def history_json(h: History) -> dict[str, Any]:
    """The file's JSON. Member names avoid secret-looking words ("key", "token", ...): the
    bundle writer redacts JSON string values under such names."""
    return {
        "format": FORMAT, "prometheus": h.prometheus, "start": h.start, "end": h.end,
        "step_s": h.step_s, "rate_window_s": h.rate_window_s,
        "series": [{"id": s.key, "title": s.title, "kind": s.kind, "unit": s.unit,
                    "query": s.query, "raw": s.raw, "error": s.error,
                    "lines": [{"labels": dict(ln.labels), "points": [list(p) for p in ln.points]}
                              for ln in s.lines]}
                   for s in h.series],
        "events": [{"series": e.key, "line": e.line, "at": e.at, "text": e.text} for e in h.events],
    }


def history_from_json(doc: Any) -> History | None:
    """The parsed history file back into dataclasses; None when it is not one."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None
    try:
        series = tuple(
            HistorySeries(str(s["id"]), str(s["title"]), str(s["kind"]), str(s.get("unit", "")),
                          str(s["query"]), s.get("raw"), s.get("error"),
                          tuple(HistoryLine(tuple(sorted((str(k), str(v))
                                                         for k, v in ln["labels"].items())),
                                            tuple((float(t), float(v)) for t, v in ln["points"]))
                                for ln in s["lines"]))
            for s in doc["series"])
        events = tuple(HistoryEvent(str(e["series"]), str(e["line"]), float(e["at"]), str(e["text"]))
                       for e in doc.get("events", []))
        return History(str(doc["prometheus"]), float(doc["start"]), float(doc["end"]),
                       float(doc["step_s"]), float(doc["rate_window_s"]), series, events)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def load_history(bundle: str | Path) -> History | None:
    """The Prometheus history of a bundle, or None when it was captured without one."""
    from pdforensics.errors import BundleError
    from pdforensics.untrusted.read import UnsafePath, read_json_inside

    try:
        doc = read_json_inside(Path(bundle), HISTORY_FILE, HISTORY_FILE)
    except UnsafePath:
        raise  # a link or special file in place of the history: refused, said so
    except BundleError:
        return None  # unreadable JSON: the report goes on without the chart
    return None if doc is None else history_from_json(doc)


def sidecars_for(prometheus: str | None, history: str | float
                 ) -> list[Callable[[BundleWriter, Deadline], None]]:
    """`capture --prometheus URL --history 2h` as run_capture sidecars (none without a URL)."""
    if not prometheus:
        return []
    from pdforensics.prometheus.api import parse_duration

    window = history if isinstance(history, float | int) else parse_duration(history)
    return [history_sidecar(prometheus, float(window))]
