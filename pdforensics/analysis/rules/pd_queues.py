"""PD disaggregation queues, KV transfer failures and KV cache pressure."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pdforensics.analysis.findings import Evidence, Finding, Need, SkipRule, rule
from pdforensics.analysis.metrics_view import (
    counter_track,
    fmt,
    gauge_track,
    rank_tracks,
    short,
)
from pdforensics.analysis.rules.context import Context
from pdforensics.analysis.rules.progress import metrics_evidence
from pdforensics.views.loaded import ServiceView


def _per_rank_text(svc: ServiceView, name: str) -> str:
    tracks = rank_tracks(svc, name)
    if len(tracks) <= 1:
        return ""
    return "per rank: " + "; ".join(f"{r or '-'} {' → '.join(fmt(v) for _t, v in t.known)}"
                                     for r, t in tracks.items())


def _queue_rule(ctx: Context, key: str, role: str, metric: str, what: str,
                next_step: str) -> Iterator[Finding]:
    servers = [s for s in ctx.servers(role) if ctx.progress(s).samples >= 2]
    if not servers:
        raise SkipRule(f"no {role} server with 2 /metrics samples")
    for svc in servers:
        t = gauge_track(svc, metric)
        if not t.comparable:
            continue
        low = min(v for _t, v in t.known)
        if low <= 0 or not t.never_lower or t.span_s < 0.9:
            continue
        p = ctx.progress(svc)
        ev: list[Evidence | str] = [metrics_evidence(ctx, svc, f"{short(metric)} {t.text()}")]
        ranks = _per_rank_text(svc, metric)
        if ranks:
            ev.append(metrics_evidence(ctx, svc, ranks))
        ev.append(metrics_evidence(ctx, svc, ("progress frozen: " if p.frozen
                                              else "progress: ") + p.text()))
        if p.judged and not p.frozen:
            if not t.frozen:
                continue  # growing while the server works: load, not a stuck queue
            yield Finding(
                key, "info",
                f"{svc.label}: {what} constant at {fmt(t.last)} while the server progresses",
                tuple(ev), "Watch it: requests that never leave this queue while others "
                "pass are stuck individually (see KV_TRANSFER_FAILURES and the logs).",
                section="pd_queues",
            )
            continue
        if not p.judged:
            continue
        state = "frozen" if t.frozen else "not draining (growing)"
        yield Finding(
            key, "critical",
            f"{svc.label}: {what} has {fmt(t.last)} requests, {state} for {t.span_s:.1f} s, "
            "and the server makes no progress",
            tuple(ev), next_step, section="pd_queues", wedge=True, subject=svc.label,
        )


@dataclass(frozen=True)
class QueueRule:
    """One PD queue gauge that must drain: a rule per row of QUEUE_RULES."""

    key: str
    rank: int
    role: str
    metric: str
    what: str
    doc: str  # the rule's one-line description
    next_step: str


QUEUE_RULES = (
    QueueRule("DECODE_TRANSFER_STUCK", 20, "decode", "sglang:num_decode_transfer_queue_reqs",
              "the decode transfer queue",
              "Decode transfer queue non-empty and not draining: KV cache never arrives from prefill.",
              "Requests wait for KV cache from prefill that never arrives: check the transfer "
              "backend (mooncake/nixl) between the prefill and decode hosts (RDMA/IB devices, "
              "NCCL_IB_*/MC_* env), the 'Decode transfer failed' log lines, and the prefill "
              "inflight queue. SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) bounds each wait."),
    QueueRule("DECODE_PREALLOC_STUCK", 22, "decode", "sglang:num_decode_prealloc_queue_reqs",
              "the decode prealloc queue",
              "Decode prealloc queue non-empty and not draining: no KV memory or no bootstrap.",
              "Requests cannot get decode KV memory or finish the bootstrap handshake: check "
              "token_usage / retractions on decode (KV_CACHE_PRESSURE) and that decode reaches "
              "the prefill bootstrap port."),
    QueueRule("PREFILL_BOOTSTRAP_STUCK", 24, "prefill", "sglang:num_prefill_bootstrap_queue_reqs",
              "the prefill bootstrap queue",
              "Prefill bootstrap queue non-empty and not draining: decode never pairs with prefill.",
              "Prefill waits for decode to bootstrap these requests: check that decode is alive "
              "and reaches --disaggregation-bootstrap-port on the prefill host, and the "
              "'Prefill bootstrap failed' / KVPoll.Bootstrapping log lines."),
    QueueRule("PREFILL_INFLIGHT_STUCK", 26, "prefill", "sglang:num_prefill_inflight_queue_reqs",
              "the prefill inflight (transfer) queue",
              "Prefill inflight queue non-empty and not draining: sent KV transfers never complete.",
              "Prefill has computed these requests but their KV transfer to decode never "
              "completes: check the transfer backend and the decode side's transfer queue."),
)


def _register(q: QueueRule) -> None:
    def queue_stuck(ctx: Context) -> Iterator[Finding]:
        yield from _queue_rule(ctx, q.key, q.role, q.metric, q.what, q.next_step)

    queue_stuck.__doc__ = q.doc
    queue_stuck.__name__ = q.key.lower()
    rule(q.key, needs=(Need.METRICS, Need.SAMPLES2), rank=q.rank)(queue_stuck)


for _q in QUEUE_RULES:
    _register(_q)


FAILURE_COUNTERS = (
    ("sglang:num_transfer_failed_reqs_total", "failed KV transfers"),
    ("sglang:num_bootstrap_failed_reqs_total", "failed bootstraps"),
)


@rule("KV_TRANSFER_FAILURES", needs=(Need.METRICS,), rank=45)
def kv_transfer_failures(ctx: Context) -> Iterator[Finding]:
    """Failed transfer / bootstrap counters non-zero, and whether they rose during capture."""
    for svc in ctx.servers():
        ev: list[Evidence | str] = []
        rising, seen = False, False
        for name, what in FAILURE_COUNTERS:
            t = counter_track(svc, name)
            if t.last is None or t.last <= 0:
                continue
            seen = True
            if t.comparable:
                grew = t.rising
                rising = rising or grew
                tail = f" (+{fmt(t.delta)} during the capture)" if grew else " (steady)"
            else:
                tail = " (one sample: cannot tell whether it rises)"
            ev.append(metrics_evidence(ctx, svc, f"{what}: {short(name)} {t.text()}{tail}"))
        if not seen:
            continue
        yield Finding(
            "KV_TRANSFER_FAILURES", "warning" if rising else "info",
            f"{svc.label}: KV transfer/bootstrap failures "
            + ("rising during the capture" if rising else "recorded (not rising now)"),
            tuple(ev),
            "Match the failures with 'Decode transfer failed' / 'Prefill bootstrap failed' "
            "log lines; rising failures mean the transfer path between prefill and decode "
            "is broken now.",
            section="pd_queues",
        )


@rule("KV_CACHE_PRESSURE", needs=(Need.METRICS,), rank=50)
def kv_cache_pressure(ctx: Context) -> Iterator[Finding]:
    """Token usage near full, retractions (the counter rising, or SGLang's own "KV cache pool is
    full. Retract requests" line inside the evidence window), memory held by preallocation."""
    for svc in ctx.servers():
        ev: list[Evidence | str] = []
        usage = gauge_track(svc, "sglang:token_usage")
        if usage.last is not None and usage.last >= 0.9:
            ev.append(metrics_evidence(ctx, svc, f"token_usage {usage.text()} (near full)"))
        retracted = gauge_track(svc, "sglang:num_retracted_reqs")
        if retracted.last is not None and retracted.last > 0:
            ev.append(metrics_evidence(ctx, svc, f"num_retracted_reqs {retracted.text()}"))
        total = counter_track(svc, "sglang:num_retracted_requests_total")
        full = [h for h in svc.log_hits if h.key == "KV_POOL_FULL"]  # inside the evidence window
        if total.rising:
            ev.append(metrics_evidence(ctx, svc, f"num_retracted_requests_total "
                                       f"{total.text()} (+{fmt(total.delta)})"))
        elif full and total.last:  # the retractions the log line reports, counted since start
            ev.append(metrics_evidence(ctx, svc, f"num_retracted_requests_total {fmt(total.last)} "
                                       "(since the server started; not rising during the capture)"))
        for h in full:
            path = svc.log_entry.path if svc.log_entry is not None else None
            ev.append(Evidence(svc.host, f"{svc.role} {svc.log_source or 'log'}",
                               f"KV cache pool is full, requests retracted: {h.count} line(s) in "
                               f"the evidence window: {h.samples[0][:240] if h.samples else ''}",
                               path))
        if not ev:
            continue
        for name in ("sglang:prealloc_full_token_usage", "sglang:pending_prealloc_token_usage"):
            t = gauge_track(svc, name)
            if t.last is not None and t.last >= 0.3:
                ev.append(metrics_evidence(ctx, svc, f"{short(name)} {t.text()} "
                                           "(memory held by preallocation)"))
        p = ctx.progress(svc)
        if p.judged:
            ev.append(metrics_evidence(ctx, svc, ("progress moving: " if p.moved
                                                  else "progress frozen: ") + p.text()))
        yield Finding(
            "KV_CACHE_PRESSURE", "warning",
            f"{svc.label}: KV cache under pressure"
            + (f" (token_usage {fmt(usage.last)})" if usage.last is not None else ""),
            tuple(ev),
            "The server is overloaded, not necessarily wedged: lower --max-running-requests "
            "or the request rate, raise --mem-fraction-static, or add decode capacity; "
            "retractions recompute work and slow everything.",
            section="kv_cache",
        )
