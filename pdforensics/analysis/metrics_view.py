"""Read SGLang gauges and counters across /metrics samples (any name spelling, per rank).

Per-rank gauges of one tp group mirror each other (every tp rank reports the same queue),
so a gauge is read as the max over tp ranks, summed over dp ranks. Counters are summed over
every series (ranks, modes, categories): only their movement matters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pdforensics.parsers.prometheus import MetricsSnapshot, Sample
from pdforensics.views.loaded import MetricSample, ServiceView

#: Counters that move whenever a server does work.
PROGRESS_COUNTERS: tuple[str, ...] = (
    "sglang:generation_tokens_total",
    "sglang:realtime_tokens_total",
    "sglang:forward_execution_seconds_total",
)
IDLE_COUNTER = "sglang:scheduler_idle_seconds_total"

#: Gauges that mean requests are inside the server.
WORK_GAUGES: tuple[tuple[str, str], ...] = (
    ("sglang:num_running_reqs", "running"),
    ("sglang:num_queue_reqs", "queued"),
    ("sglang:num_prefill_bootstrap_queue_reqs", "in prefill bootstrap queue"),
    ("sglang:num_prefill_inflight_queue_reqs", "in prefill inflight (transfer) queue"),
    ("sglang:num_decode_prealloc_queue_reqs", "in decode prealloc queue"),
    ("sglang:num_decode_transfer_queue_reqs", "in decode transfer queue"),
)


#: Endpoints whose in-flight calls are not requests for work: the scrape that reads /metrics is
#: itself counted in SGLang's ``http_requests_active{endpoint="/metrics"}`` (1 in every scrape of
#: the real 0.5.23), and the router's or our own probes and info calls come and go.
NOT_WORK_ENDPOINTS = frozenset({
    "/metrics", "/health", "/health_generate", "/server_info", "/get_server_info", "/model_info",
    "/get_model_info", "/v1/models", "/v1/loads", "/loads", "/get_load", "/freeze_gc", "/flush_cache",
    "/configure_logging", "/slow_down", "/ping", "/readiness", "/liveness",
})


def requests_active(snap: MetricsSnapshot, name: str) -> float | None:
    """In-flight HTTP requests for work (``http_requests_active``), probes and scrapes left out;
    None when the server exports no such series."""
    found = [s for s in snap.get(name) if math.isfinite(s.value)]
    if not found:
        return None
    return math.fsum(s.value for s in found if (s.label("endpoint") or "") not in NOT_WORK_ENDPOINTS)


def fmt(v: float | None) -> str:
    """A metric value as a person reads it: 14, 0.98, 1.3e+09, n/a."""
    if v is None:
        return "n/a"
    if math.isnan(v) or math.isinf(v):
        return str(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    if abs(v) >= 1e6:
        return f"{v:.4g}"
    return f"{v:.4g}" if abs(v) < 1 else f"{v:.2f}".rstrip("0").rstrip(".")


def rank_label(s: Sample) -> str:
    """``TP1`` / ``DP1_TP0`` from a sample's labels; ``""`` without rank labels."""
    tp, dp = s.label("tp_rank"), s.label("dp_rank")
    bits = []
    if dp is not None and dp not in ("", "0") or dp is not None and tp is None:
        bits.append(f"DP{dp}")
    if tp is not None:
        bits.append(f"TP{tp}")
    return "_".join(bits)


def per_rank(snap: MetricsSnapshot, name: str) -> dict[str, float]:
    """Sum of each rank's series (modes, categories folded); ``""`` for unranked series."""
    out: dict[str, float] = {}
    for s in snap.get(name):
        if math.isfinite(s.value):
            key = rank_label(s)
            out[key] = out.get(key, 0.0) + s.value
    return out


def gauge(snap: MetricsSnapshot, name: str) -> float | None:
    """A per-rank gauge read once: max over tp ranks, summed over dp ranks."""
    found = [s for s in snap.get(name) if math.isfinite(s.value)]
    if not found:
        return None
    by_dp: dict[str, float] = {}
    unranked = 0.0
    for s in found:
        if s.label("tp_rank") is None and s.label("dp_rank") is None:
            unranked += s.value
            continue
        dp = s.label("dp_rank") or "0"
        by_dp[dp] = max(by_dp.get(dp, -math.inf), s.value)
    return sum(by_dp.values()) + unranked


def counter(snap: MetricsSnapshot, name: str) -> float | None:
    """A counter summed over every series, or None when absent."""
    found = [s.value for s in snap.get(name) if math.isfinite(s.value)]
    return math.fsum(found) if found else None


@dataclass(frozen=True)
class Track:
    """One metric read from each good sample of a service, in time order."""

    name: str
    times: tuple[float, ...]
    values: tuple[float | None, ...]
    keys: tuple[str, ...] = ()  # sample keys, for evidence paths

    @property
    def known(self) -> tuple[tuple[float, float], ...]:
        return tuple((t, v) for t, v in zip(self.times, self.values, strict=True)
                     if v is not None)

    @property
    def present(self) -> bool:
        return bool(self.known)

    @property
    def first(self) -> float | None:
        k = self.known
        return k[0][1] if k else None

    @property
    def last(self) -> float | None:
        k = self.known
        return k[-1][1] if k else None

    def at(self, when: float | None) -> float | None:
        """The value of the newest sample taken at or before `when` (the first sample when
        all came later; the last when `when` is None)."""
        k = self.known
        if when is None or not k:
            return self.last
        before = [v for t, v in k if t <= when]
        return before[-1] if before else k[0][1]

    @property
    def span_s(self) -> float:
        k = self.known
        return k[-1][0] - k[0][0] if len(k) >= 2 else 0.0

    @property
    def delta(self) -> float | None:
        k = self.known
        return k[-1][1] - k[0][1] if len(k) >= 2 else None

    @property
    def comparable(self) -> bool:
        """At least two values: movement can be judged."""
        return len(self.known) >= 2

    @property
    def frozen(self) -> bool:
        k = self.known
        return len(k) >= 2 and all(v == k[0][1] for _t, v in k)

    @property
    def rising(self) -> bool:
        d = self.delta
        return d is not None and d > 0

    @property
    def never_lower(self) -> bool:
        """Every value >= the first (a queue that did not drain at all)."""
        k = self.known
        return len(k) >= 2 and all(v >= k[0][1] for _t, v in k)

    def text(self) -> str:
        """``14 → 14 → 14 over 4.0 s``."""
        vals = " → ".join(fmt(v) for _t, v in self.known)
        return f"{vals} over {self.span_s:.1f} s" if len(self.known) >= 2 else vals


_READS = {"gauge": gauge, "counter": counter, "requests": requests_active}


def _track(samples: Sequence[MetricSample], name: str, read: str) -> Track:
    times, values, keys = [], [], []
    for m in samples:
        if m.snapshot is None:
            continue
        times.append(m.taken_at)
        keys.append(m.key)
        values.append(_READS[read](m.snapshot, name))
    return Track(name, tuple(times), tuple(values), tuple(keys))


def gauge_track(svc: ServiceView, name: str) -> Track:
    return _track(svc.good_samples, name, "gauge")


def counter_track(svc: ServiceView, name: str) -> Track:
    return _track(svc.good_samples, name, "counter")


def requests_track(svc: ServiceView, name: str) -> Track:
    """``http_requests_active`` read as work: every endpoint but scrapes, probes and info calls."""
    return _track(svc.good_samples, name, "requests")


def rank_tracks(svc: ServiceView, name: str) -> dict[str, Track]:
    """One track per rank label of ``name`` (None where a sample lacks that rank)."""
    samples = [m for m in svc.good_samples if m.snapshot is not None]
    reads = [per_rank(m.snapshot, name) for m in samples if m.snapshot is not None]
    ranks = sorted({r for d in reads for r in d})
    times = tuple(m.taken_at for m in samples)
    keys = tuple(m.key for m in samples)
    return {r: Track(name, times, tuple(d.get(r) for d in reads), keys) for r in ranks}


@dataclass(frozen=True)
class Progress:
    """Did a server do work between its first and last good sample?"""

    samples: int
    span_s: float
    tracks: tuple[Track, ...]  # the progress counters that are present
    idle: Track | None

    @property
    def judged(self) -> bool:
        """Two samples or more, >= ~1 s apart, with at least one progress counter."""
        return self.samples >= 2 and self.span_s >= 0.9 and any(t.comparable
                                                                for t in self.tracks)

    @property
    def moved(self) -> bool | None:
        if not self.judged:
            return None
        return any(t.rising for t in self.tracks)

    @property
    def frozen(self) -> bool:
        return self.judged and all(t.frozen for t in self.tracks if t.comparable)

    def text(self) -> str:
        parts = [f"{short(t.name)} {t.text()}" for t in self.tracks if t.present]
        return "; ".join(parts)


def short(name: str) -> str:
    return name.split(":", 1)[1] if name.startswith("sglang:") else name


def progress(svc: ServiceView) -> Progress:
    tracks = tuple(t for t in (counter_track(svc, n) for n in PROGRESS_COUNTERS) if t.present)
    idle = counter_track(svc, IDLE_COUNTER)
    samples = svc.good_samples
    span = samples[-1].taken_at - samples[0].taken_at if len(samples) >= 2 else 0.0
    return Progress(len(samples), span, tracks, idle if idle.present else None)


def work_in_flight(svc: ServiceView) -> tuple[tuple[str, Track], ...]:
    """(what, track) for each work gauge that is > 0 in the last good sample."""
    out = []
    for name, what in WORK_GAUGES:
        t = gauge_track(svc, name)
        if t.last is not None and t.last > 0:
            out.append((what, t))
    for name in ("http_requests_active", "sglang:http_requests_active"):
        t = requests_track(svc, name)
        if t.last is not None and t.last > 0:
            out.append(("active HTTP requests (scrapes and probes not counted)", t))
    return tuple(out)
