"""The report's Requests section: the requests that never finished (stage, age, where last
seen) and the per-stage funnel, from the request tracker."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.analysis.requests_track import (
    ENABLE_HINT,
    STAGE_TITLES,
    TrackedRequest,
    track_requests,
)
from pdforensics.views.loaded import LoadedCapture

MAX_ROWS = 100


@dataclass(frozen=True)
class RequestRow:
    request: str
    room: str
    stage: str
    age: str
    last_line: str  # file:line of the last line seen
    last_text: str
    path: str | None


@dataclass(frozen=True)
class FunnelRow:
    stage: str
    count: int
    width: int  # percent of the widest stage, for the bar


@dataclass(frozen=True)
class RequestsData:
    total: int
    rows: tuple[RequestRow, ...]
    more: int
    funnel: tuple[FunnelRow, ...]
    notes: tuple[str, ...]


def _row(r: TrackedRequest, prefix: str) -> RequestRow:
    last = r.sightings[-1]
    return RequestRow(
        request=", ".join(r.rids) or "-", room=str(r.room) if r.room is not None else "-",
        stage=STAGE_TITLES[r.stage], age=f"{r.age_s:.1f} s" if r.age_s is not None else "?",
        last_line=last.where, last_text=last.event.text[:200],
        path=prefix + last.path if last.path else None)


def build_requests(capture: LoadedCapture, prefix: str = "") -> tuple[RequestsData | None, list[str]]:
    track = track_requests(capture)
    missing = [f"{label} logs no requests: {ENABLE_HINT}" for label in track.silent]
    if not track.requests:
        return None, missing or ["no request-level lines in the captured logs"]
    top = max((n for _s, n in track.funnel), default=0) or 1
    funnel = tuple(FunnelRow(STAGE_TITLES[s], n, round(100 * n / top)) for s, n in track.funnel)
    notes = ("Stages come from the log lines; where only a decode Receive line was seen, the "
             "decode's own queue gauges place open requests (transfer or running): an estimate.",)
    rows = tuple(_row(r, prefix) for r in track.open[:MAX_ROWS])
    return RequestsData(len(track.requests), rows, max(0, len(track.open) - MAX_ROWS), funnel,
                        notes), missing
