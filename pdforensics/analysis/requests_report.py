"""The request tracker as text (``analyze --requests``) and as JSON (``--json``)."""

from __future__ import annotations

from typing import Any

from pdforensics.analysis.requests_track import ENABLE_HINT, STAGE_TITLES, RequestTrack

_ROWS = 50


def requests_json(track: RequestTrack) -> dict[str, Any]:
    """The tracker for ``--json``: funnel, servers without request lines, every request."""
    return {
        "funnel": [{"stage": s, "requests": n} for s, n in track.funnel],
        "not_logging": list(track.silent),
        "enable_hint": ENABLE_HINT if track.silent else None,
        "requests": [{
            "rids": list(r.rids), "bootstrap_room": r.room, "stage": r.stage,
            "outcome": r.outcome, "first_at": r.first_at, "last_at": r.last_at,
            "age_s": r.age_s,
            "lines": [{"service": s.service, "path": s.path, "line": s.event.line_no,
                       "event": s.event.event} for s in r.sightings],
        } for r in track.requests],
    }


def format_requests_text(track: RequestTrack) -> str:
    """The open requests (stage, age) first, then the funnel; a hint when nothing is logged."""
    ended = sum(1 for r in track.requests if r.outcome in ("aborted", "failed"))
    out = [f"Requests seen in the logs: {len(track.requests)}, open (no end seen): "
           f"{len(track.open)}, ended without finishing (aborted or failed): {ended}"]
    for label in track.silent:
        out.append(f"  {label}: no request lines; {ENABLE_HINT}")
    if track.open:
        out.append(f"  {'request':<34} {'room':>20}  {'stage':<18} {'no progress for':>15}")
        for r in track.open[:_ROWS]:
            age = f"{r.age_s:.1f} s" if r.age_s is not None else "?"
            room = str(r.room) if r.room is not None else "-"
            out.append(f"  {r.name[:34]:<34} {room:>20}  {STAGE_TITLES[r.stage]:<18} {age:>15}")
        if len(track.open) > _ROWS:
            out.append(f"  ... and {len(track.open) - _ROWS} more")
    out.append("Funnel (requests that reached each stage):")
    out += [f"  {STAGE_TITLES[s]:<18} {n}" for s, n in track.funnel]
    return "\n".join(out) + "\n"
