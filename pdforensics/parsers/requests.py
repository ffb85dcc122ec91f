"""Request-level lines of SGLang server and router logs: which request, which stage, when.

The formats are SGLang's own (0.4-0.5.x, read from its source):

- ``--log-requests`` (tokenizer manager's RequestLogger): ``Receive: obj=GenerateReqInput(...
  rid='...', ... bootstrap_room=N, ...)`` and ``Finish: obj=... out={... 'meta_info': {...
  'finish_reason': {'type': 'abort', ...}}}``; with ``--log-requests-format json`` the events
  ``request.received`` / ``request.finished`` with ``"rid": "..."``.
- PD scheduler errors (disaggregation/prefill.py, decode.py): ``Prefill bootstrap failed``,
  ``Prefill transfer failed``, ``Decode handshake failed``, ``Decode transfer failed`` ``for
  request rank=R req.rid='X' req.bootstrap_room=N``.
- KV connection timeouts (mooncake/nixl conn.py): ``Request N timed out after Xs in
  KVPoll.Bootstrapping`` / ``KVPoll.WaitingForInput`` (N is the bootstrap room).
- Scheduler abort (debug level): ``Abort bootstrap queue request. req.rid='X'`` (also
  ``inflight``, ``prealloc``, ``transfer``, ``running``): the queue the request sat in.
- Router (smg / sgl-model-gateway, Rust tracing): ``started processing request`` and
  ``finished processing request`` inside a span carrying ``request_id=...``.

Pure functions of a string: never raises on arbitrary text; empty text gives no events.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.hostnum import to_int
from pdforensics.parsers.journal import parse_log_timestamp, parse_rank
from pdforensics.parsers.linescan import SMALL, lines_with, only_newlines

# event -> the pipeline stage it proves a request reached (analysis/requests_stages.py)
EVENTS = (
    "router_start", "router_finish", "received", "finished", "aborted",
    "bootstrap_failed", "kv_send_failed", "handshake_failed", "transfer_failed",
    "bootstrap_timeout", "waiting_timeout", "abort_in_queue",
)

_MAX_LINE = 20_000  # a Receive line at --log-requests-level 3 can be long; cut for regexes
_DETAIL = 300
_RID = r"""(?:rid|req\.rid|decode_req\.req\.rid)=['"]?([\w.:-]{1,200})['"]?"""
_RID_RE = linear.compile(r"(?:^|[^\w.])" + _RID)
_ROOM_RE = linear.compile(r"bootstrap_room=(-?\d{1,40})")
_FAILED_RE = linear.compile(
    r"(Prefill bootstrap|Prefill transfer|Decode handshake|Decode transfer) failed for request")
_FAILED_EVENT = {"Prefill bootstrap": "bootstrap_failed", "Prefill transfer": "kv_send_failed",
                 "Decode handshake": "handshake_failed", "Decode transfer": "transfer_failed"}
_TIMEOUT_RE = linear.compile(
    r"Request (-?\d{1,40}) timed out after [\d.]+s in KVPoll\.(Bootstrapping|WaitingForInput)")
_ABORT_Q_RE = linear.compile(r"Abort (bootstrap|inflight|prealloc|transfer|running) queue request\."
                         r"|Abort (running|queued) request\.")
_JSON_EVENT_RE = linear.compile(r'"(request\.received|request\.finished)"')
_JSON_RID_RE = linear.compile(r'"rid":\s*"([\w.:-]{1,200})"')
_ROUTER_RE = linear.compile(r"(started|finished) processing request")
_ROUTER_ID_RE = linear.compile(r"""request_id[=:]\s*"?([\w.:-]{1,200})"?""")
_FINISH_TYPE_RE = linear.compile(r"'finish_reason': \{'type': '(\w+)'")
_ROUTER_SOURCES = ("smg", "sglang_router", "model_gateway")


@dataclass(frozen=True)
class RequestEvent:
    """One request-level log line: what happened to which request, where and when."""

    line_no: int  # 1-based line number in the log text read
    at: float | None  # epoch of the line's timestamp, when it has one
    event: str  # one of EVENTS
    rid: str | None
    room: int | None  # the PD bootstrap room
    rank: str | None  # TP0, DP1_TP3, ...
    queue: str | None  # the queue an abort line names (bootstrap, prealloc, ...)
    text: str  # the line, cut to 300 characters


@dataclass(frozen=True)
class RequestLog:
    """The request-level lines of one log; ``logging_on`` when --log-requests lines appear."""

    events: tuple[RequestEvent, ...] = ()
    logging_on: bool = False


def parse_request_lines(text: str) -> RequestLog:
    """Every request-level line of a server or router log, in order."""
    events: list[RequestEvent] = []
    logging_on = False
    # every event names "equest" or "obj=" (_kind): a large text's other lines are not read
    numbered = (lines_with(text, _EVENT_MARKS) if len(text) >= SMALL and only_newlines(text)
                else enumerate(text.splitlines(), 1))
    for no, raw in numbered:
        line = raw[:_MAX_LINE]
        ev = _event(no, line)
        if ev is not None:
            events.append(ev)
            logging_on = logging_on or ev.event in ("received", "finished", "aborted")
    return RequestLog(events=tuple(events), logging_on=logging_on)


def _event(no: int, line: str) -> RequestEvent | None:
    kind, queue = _kind(line)
    if kind is None:
        return None
    rid, room = _ids(kind, line)
    if rid is None and room is None:
        return None
    return RequestEvent(line_no=no, at=parse_log_timestamp(line), event=kind, rid=rid,
                        room=room, rank=parse_rank(line), queue=queue, text=line[:_DETAIL])


_EVENT_MARKS = ("equest", "obj=")


def _kind(line: str) -> tuple[str | None, str | None]:
    """The event a line records (and the queue an abort line names), or (None, None)."""
    if "equest" not in line and "obj=" not in line:  # every event below names one of them
        return None, None
    if "Receive: obj=" in line:
        return "received", None
    if "Finish: obj=" in line:
        m = _FINISH_TYPE_RE.search(line)
        return ("aborted" if m and m.group(1) == "abort" else "finished"), None
    m = _FAILED_RE.search(line)
    if m:
        return _FAILED_EVENT[m.group(1)], None
    t = _TIMEOUT_RE.search(line)
    if t:
        return ("bootstrap_timeout" if t.group(2) == "Bootstrapping" else "waiting_timeout"), None
    a = _ABORT_Q_RE.search(line)
    if a:
        return "abort_in_queue", a.group(1) or a.group(2)
    j = _JSON_EVENT_RE.search(line)
    if j:
        return ("received" if j.group(1) == "request.received" else "finished"), None
    r = _ROUTER_RE.search(line)
    if r and (any(s in line for s in _ROUTER_SOURCES) or "request_id" in line):
        return ("router_start" if r.group(1) == "started" else "router_finish"), None
    return None, None


def _ids(kind: str, line: str) -> tuple[str | None, int | None]:
    if kind in ("router_start", "router_finish"):
        m = _ROUTER_ID_RE.search(line)
        return (m.group(1) if m else None), None
    if kind in ("bootstrap_timeout", "waiting_timeout"):
        t = _TIMEOUT_RE.search(line)
        return None, (to_int(t.group(1)) if t else None)
    rid_m = _RID_RE.search(line) or _JSON_RID_RE.search(line)
    rid = rid_m.group(1) if rid_m else None
    if rid in ("None", "none", "null"):
        rid = None
    room_m = _ROOM_RE.search(line)
    return rid, (to_int(room_m.group(1)) if room_m else None)
