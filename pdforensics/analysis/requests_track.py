"""The request tracker: each request seen in the logs, followed across the PD hop.

Request-level lines of the router, prefill and decode logs (parsers/requests.py) are joined by
request id and bootstrap room into one request each. Every event proves a stage reached:

    router -> prefill bootstrap -> prefill forward -> KV sent -> decode prealloc
           -> decode transfer -> decode running -> finished

A request that finished, was aborted or failed has ended; the others are open, at the last
stage they reached, for as long as their last line is old (to the capture's end). Where the
logs cannot tell two stages apart (a decode ``Receive`` only proves prealloc), the server's
own queue gauges at the last /metrics sample place the open requests (an estimate, said as
such in the report): a decode whose transfer queue holds the most holds them in transfer,
one with running requests and empty PD queues holds them running.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pdforensics.analysis.metrics_view import gauge_track
from pdforensics.parsers.requests import RequestEvent
from pdforensics.views.loaded import LoadedCapture, ServiceView

STAGES = ("router", "prefill_bootstrap", "prefill_forward", "kv_sent", "decode_prealloc",
          "decode_transfer", "decode_running", "finished")
STAGE_TITLES = {
    "router": "router", "prefill_bootstrap": "prefill bootstrap",
    "prefill_forward": "prefill forward", "kv_sent": "KV sent",
    "decode_prealloc": "decode prealloc", "decode_transfer": "decode transfer",
    "decode_running": "decode running", "finished": "finished",
}
_QUEUE_STAGE = {"bootstrap": "prefill_bootstrap", "inflight": "prefill_forward",
                "prealloc": "decode_prealloc", "transfer": "decode_transfer",
                "running": "decode_running", "queued": "prefill_bootstrap"}
_FAILS = {"bootstrap_failed", "kv_send_failed", "handshake_failed", "transfer_failed",
          "bootstrap_timeout", "waiting_timeout"}
#: how to turn on the lines the tracker reads, said where a server logs none
ENABLE_HINT = ("start the server with --log-requests (--log-requests-level 1 is enough: "
               "rid and bootstrap_room without the prompt), or turn it on for a while with "
               "`pdforensics capture --request-log SECONDS` (POST /configure_logging)")


@dataclass(frozen=True)
class Sighting:
    """One log line about a request: in which service's log, at which line."""

    service: str  # label: "host role:port"
    role: str
    host: str
    path: str | None  # raw log file in the bundle
    event: RequestEvent

    @property
    def where(self) -> str:
        return f"{self.path or self.service}:{self.event.line_no}"


@dataclass(frozen=True)
class TrackedRequest:
    rids: tuple[str, ...]
    room: int | None
    stage: str  # the last stage reached (STAGES)
    outcome: str  # finished | aborted | failed | open
    first_at: float | None
    last_at: float | None
    age_s: float | None  # capture end - last line, for open requests
    sightings: tuple[Sighting, ...]

    @property
    def name(self) -> str:
        return self.rids[0] if self.rids else f"room {self.room}"

    @property
    def open(self) -> bool:
        return self.outcome == "open"

    def roles(self) -> set[str]:
        return {s.role for s in self.sightings}

    def events(self, role: str | None = None) -> tuple[Sighting, ...]:
        return tuple(s for s in self.sightings if role is None or s.role == role)


@dataclass(frozen=True)
class RequestTrack:
    requests: tuple[TrackedRequest, ...]
    funnel: tuple[tuple[str, int], ...]  # stage -> requests that reached it
    silent: tuple[str, ...]  # servers whose log was read but logs no requests
    now: float

    @property
    def open(self) -> tuple[TrackedRequest, ...]:
        return tuple(r for r in self.requests if r.open)


def track_requests(capture: LoadedCapture) -> RequestTrack:
    """Every request in the captured logs, joined and placed at its last stage."""
    now = capture.finished_at or capture.started_at
    sightings: list[Sighting] = []
    silent: list[str] = []
    hints: dict[str, str] = {}
    for svc in capture.services():
        log = svc.requests
        if log is None:
            continue
        if svc.kind == "server" and not log.logging_on:
            silent.append(svc.label)
        path = svc.log_entry.path if svc.log_entry is not None else None
        sightings += [Sighting(svc.label, svc.role, svc.host, path, e) for e in log.events]
        hint = _gauge_stage(svc)
        if hint:
            hints[svc.label] = hint
    groups = _join(sightings)
    reqs = sorted((_request(g, now, hints) for g in groups),
                  key=lambda r: (not r.open, -(r.age_s or 0.0), r.first_at or 0.0))
    return RequestTrack(tuple(reqs), _funnel(reqs), tuple(silent), now)


def _join(sightings: list[Sighting]) -> list[list[Sighting]]:
    """Union of sightings sharing a rid or a bootstrap room."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def keys(s: Sighting) -> list[str]:
        e = s.event
        return [k for k in (f"rid:{e.rid}" if e.rid else "",
                            f"room:{e.room}" if e.room is not None else "") if k]

    for s in sightings:
        ks = keys(s)
        for k in ks[1:]:
            parent[find(k)] = find(ks[0])
    groups: dict[str, list[Sighting]] = {}
    for s in sightings:
        groups.setdefault(find(keys(s)[0]), []).append(s)
    return list(groups.values())


def _stage_of(s: Sighting) -> str:
    e, role = s.event, s.role
    if e.event in ("router_start",):
        return "router"
    if e.event == "abort_in_queue" and e.queue:
        return _QUEUE_STAGE.get(e.queue, "prefill_bootstrap")
    if role == "prefill":
        return {"received": "prefill_bootstrap", "bootstrap_failed": "prefill_bootstrap",
                "bootstrap_timeout": "prefill_bootstrap", "kv_send_failed": "prefill_forward",
                "finished": "kv_sent"}.get(e.event, "prefill_bootstrap")
    if role == "decode":
        return {"received": "decode_prealloc", "handshake_failed": "decode_prealloc",
                "bootstrap_timeout": "decode_prealloc", "waiting_timeout": "decode_transfer",
                "transfer_failed": "decode_transfer", "finished": "finished"
                }.get(e.event, "decode_prealloc")
    return "finished" if e.event in ("router_finish", "finished") else "router"


def _outcome(group: Iterable[Sighting]) -> str:
    events = [s.event.event for s in group]
    roles = {s.role for s in group}
    if any(e in _FAILS for e in events):
        return "failed"
    if "aborted" in events:
        return "aborted"
    if any(s.event.event in ("finished", "router_finish") and s.role in ("decode", "router")
           for s in group) or ("finished" in events and roles <= {"prefill", "unified"}):
        return "finished"
    return "open"


def _request(group: list[Sighting], now: float, hints: dict[str, str]) -> TrackedRequest:
    group.sort(key=lambda s: (s.event.at or 0.0, s.event.line_no))
    stage = max((_stage_of(s) for s in group), key=STAGES.index)
    outcome = _outcome(group)
    if outcome == "open" and stage == "decode_prealloc":
        decode = [s.service for s in group if s.role == "decode"]
        stage = next((hints[d] for d in decode if d in hints), stage)
    times = [s.event.at for s in group if s.event.at is not None]
    last = max(times) if times else None
    rids = tuple(dict.fromkeys(s.event.rid for s in group if s.event.rid))
    room = next((s.event.room for s in group if s.event.room is not None), None)
    return TrackedRequest(
        rids=rids, room=room, stage=stage, outcome=outcome,
        first_at=min(times) if times else None, last_at=last,
        age_s=max(0.0, now - last) if outcome == "open" and last is not None else None,
        sightings=tuple(group))


def _gauge_stage(svc: ServiceView) -> str | None:
    """Where a decode server's own gauges place its open requests, if they say."""
    if svc.role != "decode":
        return None

    def last(name: str) -> float:
        t = gauge_track(svc, name)
        return t.last if t.last is not None else 0.0

    prealloc = last("sglang:num_decode_prealloc_queue_reqs")
    transfer = last("sglang:num_decode_transfer_queue_reqs")
    running = last("sglang:num_running_reqs")
    if transfer > 0 and transfer >= prealloc:
        return "decode_transfer"
    if running > 0 and prealloc == 0 and transfer == 0:
        return "decode_running"
    return None


def _funnel(reqs: list[TrackedRequest]) -> tuple[tuple[str, int], ...]:
    out = []
    for i, stage in enumerate(STAGES):
        if stage == "finished":
            n = sum(1 for r in reqs if r.outcome == "finished")
        else:
            n = sum(1 for r in reqs if STAGES.index(r.stage) >= i)
        out.append((stage, n))
    return tuple(out)
