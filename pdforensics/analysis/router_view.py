"""A router's view of its workers: circuit-breaker state, dispatch counters and in-flight
requests, from its /metrics samples (smg_* names, sgl_router_* before smg 0.5.8), its
/workers or /get_loads (the role of each worker URL) and its log (breaker transitions)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdforensics.parsers.prometheus import MetricsSnapshot
from pdforensics.parsers.router_log import BreakerTransition, LogTally
from pdforensics.views.loaded import ServiceView

CB_STATE = ("smg_worker_cb_state", "sgl_router_cb_state")  # 0 closed, 1 open, 2 half_open
CB_TRANSITIONS = ("smg_worker_cb_transitions_total", "sgl_router_cb_state_transitions_total")
DISPATCHED = ("smg_worker_requests_total", "sgl_router_processed_requests_total")
ACTIVE = ("smg_worker_requests_active", "sgl_router_running_requests")
RETRIES_EXHAUSTED = ("smg_worker_retries_exhausted_total", "sgl_router_retries_exhausted_total")
#: requests inside the router now: admitted (smg), else the per-worker gauges summed
IN_FLIGHT = ("smg_admission_inflight",) + ACTIVE
STATE_NAMES = {0: "closed", 1: "open", 2: "half_open"}


@dataclass(frozen=True)
class WorkerBreaker:
    """One worker as its router saw it over the capture."""

    worker: str  # its URL, as the router labels it
    role: str | None  # prefill | decode | regular, from /workers or /get_loads
    state: int | None  # breaker state in the last sample (0 closed, 1 open, 2 half_open)
    state_metric: str | None  # the sample line that said so
    opened: float  # transitions into open seen by the last sample (counter)
    closed: float  # transitions into closed
    dispatched_first: float | None  # requests sent to it, first and last sample
    dispatched_last: float | None
    active: float | None
    log_last: BreakerTransition | None  # its last transition in the router log

    @property
    def open_now(self) -> bool:
        """Open or half-open now: by the gauge, else by the log's last transition."""
        if self.state is not None:
            return self.state in (1, 2)
        return self.log_last is not None and self.log_last.to_state in ("open", "half_open")

    @property
    def state_name(self) -> str:
        if self.state is not None:
            return STATE_NAMES.get(self.state, str(self.state))
        return self.log_last.to_state if self.log_last else "unknown"

    @property
    def dispatch_rose(self) -> bool:
        """Requests were dispatched to it during the capture."""
        return (self.dispatched_first is not None and self.dispatched_last is not None
                and self.dispatched_last > self.dispatched_first)

    @property
    def got_traffic(self) -> bool:
        """Requests were dispatched to it during the capture, or are running on it."""
        return self.dispatch_rose or bool(self.active)


def _first(snap: MetricsSnapshot, names: tuple[str, ...]) -> str | None:
    return next((n for n in names if snap.get(n)), None)


def _by_worker(snap: MetricsSnapshot | None, names: tuple[str, ...]) -> dict[str, float]:
    if snap is None:
        return {}
    name = _first(snap, names)
    out: dict[str, float] = {}
    for s in snap.get(name) if name else ():
        w = s.label("worker")
        if w is not None and math.isfinite(s.value):
            out[w] = out.get(w, 0.0) + s.value
    return out


def _transitions(snap: MetricsSnapshot | None, to_state: str) -> dict[str, float]:
    if snap is None:
        return {}
    name = _first(snap, CB_TRANSITIONS)
    out: dict[str, float] = {}
    for s in snap.get(name) if name else ():
        w = s.label("worker")
        if w is not None and s.label("to") == to_state and math.isfinite(s.value):
            out[w] = out.get(w, 0.0) + s.value
    return out


def worker_roles(s: ServiceView) -> dict[str, str]:
    """Worker URL -> role, from /workers (worker_type) or /get_loads."""
    out: dict[str, str] = {}
    for key in ("workers", "get_loads"):
        f = s.fetches.get(key)
        body = f.json() if f is not None and f.answered else None
        rows = body.get("workers" if key == "workers" else "loads") if isinstance(body, dict) else None
        for row in rows if isinstance(rows, list) else ():
            if isinstance(row, dict):
                url = row.get("url") or row.get("worker")
                role = row.get("worker_type") or row.get("role")
                if isinstance(url, str) and isinstance(role, str):
                    out.setdefault(url, role.lower())
    return out


def worker_breakers(s: ServiceView) -> tuple[WorkerBreaker, ...]:
    """Every worker the router's metrics or log name, sorted prefill first."""
    good = [m.snapshot for m in s.good_samples if m.snapshot is not None]
    first, last = (good[0], good[-1]) if good else (None, None)
    state = _by_worker(last, CB_STATE)
    state_name = _first(last, CB_STATE) if last is not None else None
    opened, closed = _transitions(last, "open"), _transitions(last, "closed")
    d0, d1 = _by_worker(first, DISPATCHED), _by_worker(last, DISPATCHED)
    active = _by_worker(last, ACTIVE)
    log_last: dict[str, BreakerTransition] = {}
    for t in s.router_log.transitions if s.router_log else ():
        log_last[t.worker] = t
    roles = worker_roles(s)
    for tally in s.router_log.tallies if s.router_log else ():
        if tally.worker:
            roles.setdefault(tally.worker, tally.role)
    workers = sorted(set(state) | set(d1) | set(active) | set(log_last),
                     key=lambda w: (roles.get(w) != "prefill", w))
    return tuple(WorkerBreaker(
        worker=w, role=roles.get(w), state=int(state[w]) if w in state else None,
        state_metric=f'{state_name}{{worker="{w}"}} {state[w]:g}' if w in state else None,
        opened=opened.get(w, 0.0), closed=closed.get(w, 0.0), dispatched_first=d0.get(w),
        dispatched_last=d1.get(w), active=active.get(w), log_last=log_last.get(w),
    ) for w in workers)


def worker_errors(s: ServiceView, worker: str) -> tuple[LogTally, ...]:
    """The router log's tallies of error answers from this worker."""
    return tuple(t for t in (s.router_log.tallies if s.router_log else ())
                 if t.kind == "worker_error" and t.worker == worker)


def router_in_flight(s: ServiceView) -> float | None:
    """Requests inside the router in its last good sample: admitted requests (smg), else the
    per-worker running gauges summed over workers; None when no such gauge was read."""
    good = s.good_samples
    snap = good[-1].snapshot if good else None
    if snap is None:
        return None
    for name in IN_FLIGHT:
        found = [x.value for x in snap.get(name) if math.isfinite(x.value)]
        if found:
            return math.fsum(found)
    return None


def retries_exhausted(s: ServiceView) -> dict[str, float]:
    """Requests that used up every retry, by worker_type (smg) or route (sgl_router), > 0 only."""
    good = s.good_samples
    snap = good[-1].snapshot if good else None
    name = _first(snap, RETRIES_EXHAUSTED) if snap is not None else None
    out: dict[str, float] = {}
    for x in snap.get(name) if snap is not None and name else ():
        key = x.label("worker_type") or x.label("route") or "all"
        if math.isfinite(x.value) and x.value > 0:
            out[key] = out.get(key, 0.0) + x.value
    return out


def listed_workers(s: ServiceView) -> list[dict[str, object]] | None:
    """The router's /workers rows; None when /workers was not read."""
    f = s.fetches.get("workers")
    body = f.json() if f is not None and f.answered else None
    rows = body.get("workers") if isinstance(body, dict) else body
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else None


@dataclass(frozen=True)
class RoleAvailability:
    """The workers of one role as the router sees them now: which of them it can route to."""

    role: str
    workers: tuple[str, ...]  # every worker of the role the router names
    available: tuple[str, ...]  # registered, healthy by /workers, breaker closed
    why: tuple[str, ...]  # per unavailable worker: "URL: breaker open", "URL: unhealthy"

    @property
    def none_left(self) -> bool:
        return not self.available


def availability(s: ServiceView) -> dict[str, RoleAvailability]:
    """Prefill and decode (or regular) workers the router can route to, from /workers
    (registered, is_healthy) and the breaker gauges. A PD router whose /workers lists no
    worker of a role has none of it: every request fails."""
    listed = listed_workers(s)
    breakers = {b.worker: b for b in worker_breakers(s)}
    roles = worker_roles(s)
    healthy: dict[str, bool] = {}
    for row in listed or ():
        url, good = row.get("url"), row.get("is_healthy")
        if isinstance(url, str) and isinstance(good, bool):
            healthy[url] = good
    registered = set(roles) if listed is not None else set(roles) | set(breakers)
    by_role: dict[str, list[str]] = {}
    for w in sorted(registered | (set(breakers) if listed is None else set())):
        by_role.setdefault(roles.get(w) or (breakers[w].role if w in breakers else None)
                           or "unknown", []).append(w)
    pd = "prefill" in by_role or "decode" in by_role
    if pd and listed is not None:
        for role in ("prefill", "decode"):
            by_role.setdefault(role, [])
    out: dict[str, RoleAvailability] = {}
    for role, workers in by_role.items():
        if role == "unknown":
            continue
        ok: list[str] = []
        why: list[str] = []
        for w in workers:
            b = breakers.get(w)
            if b is not None and b.open_now:
                why.append(f"{w}: breaker {b.state_name}")
            elif healthy.get(w) is False:
                why.append(f"{w}: unhealthy on /workers")
            else:
                ok.append(w)
        if not workers:
            why.append(f"no {role} worker registered on /workers")
        out[role] = RoleAvailability(role, tuple(workers), tuple(ok), tuple(why))
    return out
