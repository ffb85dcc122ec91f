"""SGLang and router load documents: ``/v1/loads`` (``/get_load`` before), the router's
``/get_loads`` and ``/workers``, and ``/model_info`` -- and the ways each one misleads.

- ``/v1/loads`` (SGLang 0.5.x) is read from a snapshot the scheduler publishes (shared memory
  or ZMQ), not asked of the scheduler: it answers while the scheduler is wedged, with the
  numbers of the last moment it published. Each load carries that moment (``timestamp``), the
  answer carries now: a snapshot many seconds old that still shows work means the scheduler
  stopped publishing mid-work. An idle scheduler also stops publishing after its last idle
  snapshot, so zeros on an old snapshot are no evidence of anything.
- ``num_running_reqs`` counts the running batch only: requests held in the PD queues
  (bootstrap, prealloc, transfer) are under ``disaggregation``; ``utilization`` -1 means not
  measured, never idle.
- ``/get_load`` answers 404 on 0.5.23: the endpoint was renamed (``/v1/loads``), the server
  is not broken. ``/model_info`` is answered by the HTTP process alone: a 200 says nothing
  about the scheduler.
- The router's ``/get_loads`` relays each worker's load and averages them (``aggregate``):
  an average hides one rank holding all the work. The same JSON comes back whether the
  router reaches its workers over HTTP or gRPC.
Never raises on arbitrary input (the caller parses the JSON).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from typing import Any

from pdforensics import linear

_ISO = linear.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?")
_PD_QUEUES = ("prefill_bootstrap_queue_reqs", "prefill_inflight_queue_reqs",
              "decode_prealloc_queue_reqs", "decode_transfer_queue_reqs",
              "decode_retracted_queue_reqs")
#: a snapshot older than this while it shows work: the scheduler stopped publishing
STALE_S = 30.0


@dataclass(frozen=True)
class RankLoad:
    """One data-parallel rank's (or one worker's) load."""

    worker: str | None  # router rows: the worker URL
    role: str | None  # prefill | decode | None
    dp_rank: int | None
    running: int | None
    waiting: int | None
    queues: tuple[tuple[str, int], ...]  # PD queue counts that are non-zero
    token_usage: float | None
    utilization: float | None
    snapshot_at: float | None  # epoch of the snapshot, when the document gives it

    @property
    def busy(self) -> bool:
        return bool(self.running or self.waiting or self.queues)


@dataclass(frozen=True)
class LoadDoc:
    """What one load-like document says."""

    kind: str  # v1_loads | get_load | router_loads | router_workers | model_info | not_found
    role: str | None  # the server's PD mode (from the document), when it says
    version: str | None
    answered_at: float | None  # the answer's own time
    ranks: tuple[RankLoad, ...]
    notes: tuple[str, ...]  # the ways this document misleads, as they apply to it

    def stale(self) -> tuple[RankLoad, ...]:
        """Ranks whose snapshot is older than STALE_S while it still shows work."""
        if self.answered_at is None:
            return ()
        return tuple(r for r in self.ranks if r.busy and r.snapshot_at is not None
                     and self.answered_at - r.snapshot_at > STALE_S)


def _epoch(v: object) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v) if 1e9 < v < 1e11 else None
    if isinstance(v, str) and (m := _ISO.match(v)) is not None:
        y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
        frac = m.group(7) or ""
        if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s <= 60):
            return None
        return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + (int(frac) / 10 ** len(frac)
                                                                  if frac else 0.0)
    return None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _rank(row: dict[str, Any], role: str | None) -> RankLoad:
    disagg = row.get("disaggregation")
    queues: list[tuple[str, int]] = []
    if isinstance(disagg, dict):
        role = role or (str(disagg["mode"]) if disagg.get("mode") in ("prefill", "decode") else None)
        queues = [(k, n) for k in _PD_QUEUES if (n := _int(disagg.get(k)))]
    wt = row.get("worker_type")
    running = _int(row.get("num_running_reqs"))
    if running is None:
        running = _int(row.get("num_reqs"))  # /get_load before 0.5
    return RankLoad(str(row["worker"]) if isinstance(row.get("worker"), str) else None,
                    str(wt) if wt in ("prefill", "decode") else role, _int(row.get("dp_rank")),
                    running, _int(row.get("num_waiting_reqs")), tuple(queues),
                    _num(row.get("token_usage")), _num(row.get("utilization")),
                    _epoch(row.get("timestamp")))


def _notes(doc: LoadDoc) -> tuple[str, ...]:
    out = []
    if doc.kind in ("v1_loads", "get_load", "router_loads"):
        if doc.ranks and not any(r.busy for r in doc.ranks):
            out.append("every load is zero: not evidence of idleness (a wedged scheduler's last "
                       "snapshot, or requests outside the counted queues)")
        if any(r.utilization is not None and r.utilization < 0 for r in doc.ranks):
            out.append("utilization -1 means not measured, not idle")
        for r in doc.stale():
            age = (doc.answered_at or 0) - (r.snapshot_at or 0)
            out.append(f"dp rank {r.dp_rank}: snapshot {age:.0f} s old still shows work: the "
                       "scheduler stopped publishing its load")
    if doc.kind == "router_loads":
        out.append("the router's aggregate averages its workers: read each worker's row")
    if doc.kind == "model_info":
        out.append("/model_info is answered without the scheduler: a 200 says nothing about it")
    if doc.kind == "not_found":
        out.append("404: the endpoint does not exist on this version (/get_load became "
                   "/v1/loads), not a broken server")
    return tuple(out)


def read_load_doc(obj: object) -> LoadDoc | None:
    """The load document ``obj`` (parsed JSON) is, or None when it is none of them."""
    kind, role, version, at, rows = None, None, None, None, []
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj) and any(
            "num_reqs" in r or "num_running_reqs" in r for r in obj):
        kind, rows = "get_load", [_rank(r, None) for r in obj]
    elif isinstance(obj, dict):
        version = str(obj["version"]) if isinstance(obj.get("version"), str) else None
        at = _epoch(obj.get("timestamp"))
        loads = obj.get("loads")
        if isinstance(loads, list) and all(isinstance(r, dict) for r in loads):
            kind = "router_loads" if "aggregate" in obj or any("worker" in r for r in loads) \
                else "v1_loads"
            rows = [_rank(r, None) for r in loads]
        elif isinstance(obj.get("workers"), list):
            kind = "router_workers"
        elif "model_path" in obj and "is_generation" in obj:
            kind = "model_info"
            mode = obj.get("disaggregation_mode")
            role = str(mode) if mode in ("prefill", "decode") else None
        elif set(obj) == {"detail"} and str(obj.get("detail")).lower() == "not found":
            kind = "not_found"
    if kind is None:
        return None
    roles = {r.role for r in rows if r.role}
    if role is None and len(roles) == 1 and kind != "router_loads":
        role = roles.pop()
    doc = LoadDoc(kind, role, version, at, tuple(rows), ())
    return LoadDoc(doc.kind, doc.role, doc.version, doc.answered_at, doc.ranks, _notes(doc))
