"""Router-side rules: a worker's circuit breaker stuck open, decode fed without prefill."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.router_view import (
    RoleAvailability,
    WorkerBreaker,
    availability,
    retries_exhausted,
    worker_breakers,
    worker_errors,
)
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.journal import parse_log_timestamp
from pdforensics.views.hostclock import to_capture_clock
from pdforensics.views.loaded import ServiceView

LOG_SOURCES = ("router_log", "router_journal")


def _log_path(ctx: Context, s: ServiceView) -> str | None:
    """The router log's raw file in the bundle (its line numbers are the evidence's)."""
    return next((e.path for e in ctx.capture.results
                 if e.host == s.host and e.source in LOG_SOURCES and e.path), None)


def _metrics_path(ctx: Context, s: ServiceView) -> str | None:
    good = s.good_samples
    return ctx.path_of(s.host, good[-1].key) if good else None


def _breaker_evidence(ctx: Context, s: ServiceView, b: WorkerBreaker) -> list[Evidence]:
    out: list[Evidence] = []
    mpath, lpath = _metrics_path(ctx, s), _log_path(ctx, s)
    where = lpath or "router log"
    if b.state_metric:
        out.append(Evidence(s.host, "/metrics", f"{b.state_metric} ({b.state_name}); transitions "
                            f"to open {b.opened:g}, to closed {b.closed:g}", mpath))
    if b.log_last is not None:
        t = b.log_last
        out.append(Evidence(s.host, "log", f"{where}:{t.line}: {t.time or '?'} breaker {t.from_state} -> "
                            f"{t.to_state} worker_url={t.worker}"
                            + (f" request_id={t.request_id}" if t.request_id else ""), lpath))
    for e in worker_errors(s, b.worker):
        out.append(Evidence(s.host, "log", f"{where}:{e.first_line}-{e.last_line}: {e.count} x "
                            f"{e.role} server returned {e.status} ({e.first_time} .. {e.last_time})",
                            lpath))
    return out


def log_epoch(ctx: Context, s: ServiceView, stamp: str | None) -> float | None:
    """A router log line's time on our clock (its host's clock offset taken off)."""
    t = parse_log_timestamp(stamp) if stamp else None
    off = next((h.clock_offset_s for h in ctx.capture.hosts if h.name == s.host), None)
    return to_capture_clock(t, off)


def trouble_since(ctx: Context, s: ServiceView, workers: set[str], role: str) -> float | None:
    """The first sign in the router log (inside the window) that these workers failed: a
    breaker opening, an error answer, "no available ROLE workers"."""
    log = s.router_log
    stamps = [t.time for t in (log.transitions if log else ())
              if t.worker in workers and t.to_state == "open"]
    stamps += [t.first_time for t in (log.tallies if log else ())
               if (t.kind == "worker_error" and t.worker in workers)
               or (t.kind == "no_workers" and t.role == role)]
    times = [t for x in stamps if (t := log_epoch(ctx, s, x)) is not None]
    return min(times) if times else None


def _availability_evidence(ctx: Context, s: ServiceView, a: RoleAvailability) -> list[Evidence | str]:
    ev: list[Evidence | str] = [Evidence(s.host, "/workers" if "registered" in w else "/metrics",
                                         w, _metrics_path(ctx, s)) for w in a.why]
    log = s.router_log
    for t in (log.tallies if log else ()):
        if t.kind == "no_workers" and t.role == a.role:
            ev.append(Evidence(s.host, "log", f"{_log_path(ctx, s) or 'router log'}:"
                               f"{t.first_line}-{t.last_line}: {t.count} x {t.example[:200]}",
                               _log_path(ctx, s)))
    return ev


@rule("ROUTER_NO_WORKERS", needs=(Need.ROUTER,), rank=5)
def router_no_workers(ctx: Context) -> Iterator[Finding]:
    """The router has no worker left for a role it needs: every request fails (an outage)."""
    for s in ctx.routers():
        roles = availability(s)
        down = [a for a in roles.values() if a.none_left]
        if not down:
            continue
        ev: list[Evidence | str] = []
        for a in down:
            ev += _availability_evidence(ctx, s, a)
        times = [t for a in down if (t := trouble_since(ctx, s, set(a.workers), a.role)) is not None]
        names = " and ".join(f"{a.role} ({len(a.workers)} worker{'s' if len(a.workers) != 1 else ''})"
                             for a in down)
        yield Finding(
            key="ROUTER_NO_WORKERS", severity="critical", outage=True, subject=s.label,
            title=f"{s.label}: no {names} available to route to: every request fails",
            evidence=tuple(ev), since=min(times) if times else None, section="topology",
            next_step=("Restore one worker of each role the router lacks: restart the failing "
                       "server (capture first), or register a healthy one on the router "
                       "(POST /workers). The breaker of a worker that answers again closes after "
                       "--cb-success-threshold successes; /workers and smg_worker_cb_state show it."),
        )


def _traffic(breakers: tuple[WorkerBreaker, ...], role: str | None) -> list[WorkerBreaker]:
    return [b for b in breakers if b.role is not None and b.role != role and b.got_traffic]


@rule("ROUTER_BREAKER_OPEN", needs=(Need.ROUTER,), rank=15)
def router_breaker_open(ctx: Context) -> Iterator[Finding]:
    """A worker's circuit breaker is open or half-open with no close since."""
    for s in ctx.routers():
        breakers = worker_breakers(s)
        stuck = [b for b in breakers if b.open_now]
        if not stuck:
            continue
        # the worker whose own errors the log names is the cause; smg charges a failed PD
        # pair to both legs, so the other leg's breaker opens with it
        stuck.sort(key=lambda b: (not worker_errors(s, b.worker), b.role != "prefill"))
        lead = stuck[0]
        role = lead.role or "unknown-role"
        same = [b for b in breakers if b.role == lead.role]
        blocked = bool(same) and all(b.open_now for b in same)
        fed = _traffic(breakers, lead.role)
        evidence: list[Evidence | str] = []
        for b in stuck:
            evidence += _breaker_evidence(ctx, s, b)
        for b in fed:
            evidence.append(Evidence(s.host, "/metrics", f"{b.role} worker {b.worker} still got "
                                     f"requests: dispatched {b.dispatched_first} -> {b.dispatched_last}, "
                                     f"active {b.active}", _metrics_path(ctx, s)))
        exhausted = retries_exhausted(s)
        if exhausted:
            evidence.append(Evidence(s.host, "/metrics", "retries exhausted: " + ", ".join(
                f"{k} {v:g}" for k, v in sorted(exhausted.items())), _metrics_path(ctx, s)))
        others = [b.worker for b in stuck[1:]]
        title = (f"router circuit breaker {lead.state_name} for {role} worker {lead.worker}"
                 + (f" (also {', '.join(others)})" if others else "")
                 + ("; no " + role + " worker is left to route to" if blocked else "")
                 + ("; the other role still gets requests" if fed else ""))
        errors = worker_errors(s, lead.worker)
        since = trouble_since(ctx, s, {b.worker for b in stuck}, role)
        why = (f"the router log shows {errors[0].count} answers {errors[0].status} from it first "
               f"(line {errors[0].first_line}, {errors[0].first_time})" if errors
               else "the router log names no error answer from it")
        yield Finding(
            key="ROUTER_BREAKER_OPEN", severity="critical" if blocked or fed else "warning",
            title=title, evidence=tuple(evidence), subject=s.label, since=since,
            next_step=(f"The router stops sending to {lead.worker} while its breaker is open; {why}. "
                       f"Check that {role} server's log around the first error and its "
                       "/health_generate: the breaker half-opens after --cb-timeout-duration-secs "
                       "(60 s by default) and opens again on the next failure. smg counts a failed "
                       "PD pair against both legs, so a decode breaker that opened in the same second "
                       "is a consequence. Once the worker answers, the breaker closes after "
                       "--cb-success-threshold successes; /workers and smg_worker_cb_state show it."),
        )


def _listed_prefill(s: ServiceView) -> list[str] | None:
    """Prefill worker URLs on the router's /workers; None when /workers was not read."""
    f = s.fetches.get("workers")
    body = f.json() if f is not None and f.answered else None
    rows = body.get("workers") if isinstance(body, dict) else None
    if not isinstance(rows, list):
        return None
    return [str(r.get("url")) for r in rows if isinstance(r, dict) and r.get("worker_type") == "prefill"]


@rule("DECODE_ONLY_DISPATCH", needs=(Need.ROUTER,), rank=16)
def decode_only_dispatch(ctx: Context) -> Iterator[Finding]:
    """Decode workers receive requests while no prefill worker does: decode's dispatch count
    rises and prefill's does not, or requests run on decode with no prefill worker known. A
    decode running requests alone is no evidence of it (smg sends each PD pair to both;
    prefill finishes its half first, so its active count drops to 0 while decode generates:
    the real smg 1.13 under a stopped decode showed 22 sent to each, 3 active on decode)."""
    for s in ctx.routers():
        breakers = worker_breakers(s)
        decode = [b for b in breakers if b.role == "decode"]
        prefill = [b for b in breakers if b.role == "prefill"]
        fed = [b for b in decode if b.dispatch_rose or (not prefill and b.active)]
        if not fed or any(b.got_traffic for b in prefill) or len(s.good_samples) < 2 and prefill:
            continue
        mpath = _metrics_path(ctx, s)
        evidence: list[Evidence | str] = [
            Evidence(s.host, "/metrics", f"decode worker {b.worker}: dispatched {b.dispatched_first} -> "
                     f"{b.dispatched_last}, active {b.active}", mpath) for b in fed]
        listed = _listed_prefill(s)
        evidence += [Evidence(s.host, "/metrics", f"prefill worker {b.worker}: dispatched "
                              f"{b.dispatched_first} -> {b.dispatched_last}, breaker {b.state_name}"
                              + (" (not on /workers)" if listed is not None and b.worker not in listed
                                 else ""), mpath) for b in prefill]
        if not prefill or listed == []:
            evidence.append(Evidence(s.host, "/workers", "no prefill worker registered"))
        yield Finding(
            key="DECODE_ONLY_DISPATCH", severity="critical", subject=s.label,
            title=f"router sends requests to decode ({len(fed)} worker(s)) but none to prefill",
            evidence=tuple(evidence),
            next_step=("Each decode request waits for KV from a prefill that never got its half; "
                       "check /workers on the router (prefill workers registered, healthy, breaker "
                       "closed) and its --prefill URLs and bootstrap ports; then the decode "
                       "server's prealloc/transfer queues, which fill with requests that cannot finish."),
        )
