"""Rules over the request tracker: requests forgotten, stranded in prefill, leaked in prealloc."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pdforensics.analysis.findings import Evidence, Finding, Need, SkipRule, rule
from pdforensics.analysis.metrics_view import gauge_track, requests_track, short
from pdforensics.analysis.requests_track import (
    ENABLE_HINT,
    STAGE_TITLES,
    RequestTrack,
    Sighting,
    TrackedRequest,
    track_requests,
)
from pdforensics.analysis.rules.context import Context
from pdforensics.analysis.rules.progress import metrics_evidence
from pdforensics.views.loaded import ServiceView

DEFAULT_PD_TIMEOUT_S = 300.0  # SGLANG_DISAGGREGATION_{BOOTSTRAP,WAITING}_TIMEOUT (0.5.x)
TIMEOUT_ENV = ("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT")
SETTLE_S = 1.0  # a decode failure this old with prefill still holding the room is stranded
_DECODE_FAILS = {"handshake_failed", "transfer_failed", "bootstrap_timeout", "waiting_timeout",
                 "aborted"}
_ENDS = {"finished", "aborted", "bootstrap_failed", "kv_send_failed", "bootstrap_timeout"}
_SHOW = 5


def _track(ctx: Context) -> RequestTrack:
    track = track_requests(ctx.capture)
    if not track.requests:
        silent = f" ({', '.join(track.silent)} log no requests: {ENABLE_HINT})" if track.silent \
            else ""
        raise SkipRule(f"no request-level log lines in the captured logs{silent}")
    return track


def pd_timeout_s(servers: Sequence[ServiceView]) -> float:
    """The longest PD timeout configured on these servers (their env), default 300 s."""
    values = [DEFAULT_PD_TIMEOUT_S]
    for s in servers:
        for name in TIMEOUT_ENV:
            try:
                values.append(float(s.environ[name]))
            except (KeyError, ValueError):
                continue
    explicit = values[1:]
    return max(explicit) if explicit else DEFAULT_PD_TIMEOUT_S


def _line(s: Sighting) -> Evidence:
    return Evidence(s.host, f"{s.role}:{s.service.rsplit(':', 1)[-1]} log",
                    f"{s.where} {s.event.text[:160]}", s.path)


def _names(reqs: Sequence[TrackedRequest]) -> str:
    shown = ", ".join(r.name for r in reqs[:_SHOW])
    return shown + (f" and {len(reqs) - _SHOW} more" if len(reqs) > _SHOW else "")


def _gauges(ctx: Context, role: str, names: Sequence[str]) -> list[Evidence]:
    out = []
    for svc in ctx.servers(role):
        parts = [f"{short(n)} {gauge_track(svc, n).text()}" for n in names
                 if gauge_track(svc, n).present]
        held = requests_track(svc, "sglang:http_requests_active")
        if held.last:  # the real 0.5.23's queue gauges read 0 while requests wait: this holds them
            parts.append(f"http_requests_active (requests, not probes) {held.text()}")
        if parts:
            out.append(metrics_evidence(ctx, svc, "; ".join(parts)))
    return out


def _oom_decoders(ctx: Context) -> list[ServiceView]:
    return [s for s in ctx.servers("decode")
            if any(h.key == "OUT_OF_MEMORY" for h in s.log_hits)]


def _leaked(ctx: Context, track: RequestTrack) -> list[TrackedRequest]:
    """Open requests a decode holds in prealloc while that decode logged an OOM."""
    if not _oom_decoders(ctx):
        return []
    return [r for r in track.open if r.stage == "decode_prealloc" and "decode" in r.roles()]


def _prefill_open(r: TrackedRequest) -> bool:
    events = [s.event.event for s in r.events("prefill")]
    return bool(events) and "received" in events and not (set(events) & _ENDS)


@rule("STRANDED_BOOTSTRAP", needs=(Need.LOGS,), rank=18)
def stranded_bootstrap(ctx: Context) -> Iterator[Finding]:
    """A decode leg failed while prefill still holds the request's bootstrap room."""
    track = _track(ctx)
    stranded = []
    for r in track.requests:
        fails = [s for s in r.events("decode") if s.event.event in _DECODE_FAILS
                 and s.event.at is not None and track.now - s.event.at >= SETTLE_S]
        if fails and _prefill_open(r):
            stranded.append((r, fails[0]))
    if not stranded:
        return
    timeout = pd_timeout_s(ctx.servers("prefill"))
    reqs = [r for r, _f in stranded]
    ev: list[Evidence | str] = [f"requests {_names(reqs)}: decode leg failed, prefill room open"]
    for r, fail in stranded[:3]:
        ev.append(_line(fail))
        ev += [_line(s) for s in r.events("prefill")[:1]]
    ev += _gauges(ctx, "prefill", ("sglang:num_prefill_bootstrap_queue_reqs",
                                   "sglang:num_prefill_prealloc_queue_reqs"))
    yield Finding(
        "STRANDED_BOOTSTRAP", "critical",
        f"{len(reqs)} request(s) failed on decode while prefill still holds their bootstrap "
        f"room (held until the {timeout:.0f} s bootstrap timeout)",
        tuple(ev),
        "Find why decode's handshake or transfer failed (the decode log lines above: prefill's "
        "bootstrap server reachable? Mooncake session alive?). Prefill frees the rooms only at "
        "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT: lower it, or run an SGLang that tells prefill "
        "of decode-side failures, so the bootstrap queue does not fill with dead rooms.",
        section="requests", wedge=True)


@rule("PREALLOC_LEAK", needs=(Need.LOGS,), rank=19)
def prealloc_leak(ctx: Context) -> Iterator[Finding]:
    """Decode OOM or failure strands requests in the decode prealloc queue."""
    track = _track(ctx)
    leaked = _leaked(ctx, track)
    if not leaked:
        return
    ev: list[Evidence | str] = [
        f"requests {_names(leaked)} open at decode prealloc for "
        f"{max(r.age_s or 0.0 for r in leaked):.1f} s"]
    for r in leaked[:3]:
        ev += [_line(s) for s in r.events("decode")[:1]]
    for svc in _oom_decoders(ctx):
        hit = next(h for h in svc.log_hits if h.key == "OUT_OF_MEMORY")
        sample = hit.samples[0][:160] if hit.samples else ""
        ev.append(Evidence(svc.host, f"{svc.role}:{svc.port} log",
                           f"OUT_OF_MEMORY x{hit.count}: {sample}",
                           svc.log_entry.path if svc.log_entry else None))
    ev += _gauges(ctx, "decode", ("sglang:num_decode_prealloc_queue_reqs",
                                  "sglang:num_decode_transfer_queue_reqs"))
    yield Finding(
        "PREALLOC_LEAK", "critical",
        f"{len(leaked)} request(s) stranded in the decode prealloc queue after a decode "
        "out-of-memory error",
        tuple(ev),
        "The decode server ran out of memory while preallocating KV for these requests and "
        "never released them: check its memory (--mem-fraction-static, "
        "--max-running-requests, CUDA graph sizes) and restart the decode server to free "
        "the queue; prefill's bootstrap rooms for them stay open until the bootstrap timeout.",
        section="requests", wedge=True)


@rule("FORGOTTEN_REQUESTS", needs=(Need.LOGS,), rank=61)
def forgotten_requests(ctx: Context) -> Iterator[Finding]:
    """Requests with no progress for longer than the configured PD timeouts."""
    track = _track(ctx)
    timeout = pd_timeout_s(ctx.servers())
    leaked = {id(r) for r in _leaked(ctx, track)}
    old = [r for r in track.open if r.age_s is not None and r.age_s > timeout
           and id(r) not in leaked]
    if not old:
        return
    stages: dict[str, int] = {}
    for r in old:
        stages[r.stage] = stages.get(r.stage, 0) + 1
    where = ", ".join(f"{n} at {STAGE_TITLES[s]}" for s, n in stages.items())
    ev: list[Evidence | str] = [
        f"requests {_names(old)}: {where}; no log line for {min(r.age_s or 0 for r in old):.1f}"
        f"-{max(r.age_s or 0 for r in old):.1f} s (timeouts {timeout:.0f} s)"]
    for r in old[:3]:
        ev += [_line(s) for s in r.sightings[-1:]]
    ev += _gauges(ctx, "decode", ("sglang:num_running_reqs", "sglang:num_decode_transfer_queue_reqs",
                                  "sglang:num_decode_prealloc_queue_reqs"))
    yield Finding(
        "FORGOTTEN_REQUESTS", "critical",
        f"{len(old)} request(s) accepted and forgotten: no progress for longer than the "
        f"{timeout:.0f} s PD timeouts ({where})",
        tuple(ev),
        "The timeouts that should have ended these requests did not: look at the stage they "
        "stopped in (the request table) and that server's stacks and queues; abort them "
        "(POST /abort_request with the rid) or restart that server, and check the "
        "PD timeouts and --watchdog-timeout are set.",
        section="requests", wedge=False)
