"""The gateway's log (smg / sglang-router: a file or journald) -> circuit-breaker transitions
and per-worker failures, each with the line number it came from.

smg writes `tracing` lines, ANSI colours included even into a file:
``2026-12-03 12:17:26  INFO http_request{...request_id="gnt-..."}: smg::worker::circuit_breaker:
.../circuit_breaker.rs:293: Circuit breaker state transition: closed -> open worker_url=http://...``.
A log is a grep target: lines that match nothing are skipped, so this never raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear

ANSI = linear.compile(r"\x1b\[[0-9;]*[A-Za-z]")
STAMP = linear.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)")
REQUEST_ID = linear.compile(r'request_id="([^"]{1,80})"')
TRANSITION = linear.compile(r"[Cc]ircuit breaker state transition: (\w+) -> (\w+)(?:.*?worker_url=(\S+))?")
WORKER_ERROR = linear.compile(r"(Prefill|Decode) server returned error status (?:\w+_url=(\S+) )?status=(\d{3})")
NO_WORKERS = linear.compile(r"No (?:available )?(prefill|decode) workers")
MAX_TRANSITIONS = 500


@dataclass(frozen=True)
class BreakerTransition:
    """One logged breaker transition of one worker."""

    line: int  # 1-based line number in the log text
    time: str | None
    worker: str
    from_state: str
    to_state: str
    request_id: str | None


@dataclass(frozen=True)
class LogTally:
    """Lines of one kind (a worker's error status, "no available workers" of a role):
    how many, and the first and last of them."""

    kind: str  # worker_error | no_workers
    role: str  # prefill | decode
    worker: str | None
    status: int | None
    count: int
    first_line: int
    first_time: str | None
    last_line: int
    last_time: str | None
    example: str  # the first line, ANSI removed, cut to 300 characters


@dataclass(frozen=True)
class RouterLog:
    """What the gateway's log says about its workers."""

    transitions: tuple[BreakerTransition, ...] = ()
    tallies: tuple[LogTally, ...] = ()
    lines: int = 0


def _url(text: str | None) -> str | None:
    return text.strip('",') if text else None


@dataclass
class _Run:
    count: int
    first_line: int
    first_time: str | None
    last_line: int
    last_time: str | None
    example: str


TallyKey = tuple[str, str, "str | None", "int | None"]


def _tally_key(line: str) -> TallyKey | None:
    e = WORKER_ERROR.search(line)
    if e:
        return ("worker_error", e.group(1).lower(), _url(e.group(2)), int(e.group(3)))
    w = NO_WORKERS.search(line)
    return ("no_workers", w.group(1), None, None) if w else None


def parse_router_log(text: str) -> RouterLog:
    """Breaker transitions (the last 500) and per-worker failure tallies of a gateway log."""
    transitions: list[BreakerTransition] = []
    runs: dict[TallyKey, _Run] = {}
    n = 0
    for n, raw in enumerate(text.splitlines(), start=1):
        if "ircuit breaker" not in raw and "server returned" not in raw and "No " not in raw:
            continue
        line = ANSI.sub("", raw)
        stamp = STAMP.search(line)
        when = stamp.group(1) if stamp else None
        m = TRANSITION.search(line)
        if m:
            rid = REQUEST_ID.search(line)
            transitions.append(BreakerTransition(n, when, _url(m.group(3)) or "?", m.group(1),
                                                 m.group(2), rid.group(1) if rid else None))
            continue
        key = _tally_key(line)
        if key is None:
            continue
        run = runs.get(key)
        if run is None:
            runs[key] = _Run(1, n, when, n, when, line[:300])
        else:
            run.count, run.last_line, run.last_time = run.count + 1, n, when
    tallies = tuple(LogTally(k[0], k[1], k[2], k[3], r.count, r.first_line, r.first_time,
                             r.last_line, r.last_time, r.example) for k, r in runs.items())
    return RouterLog(tuple(transitions[-MAX_TRANSITIONS:]), tallies, n)
