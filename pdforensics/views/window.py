"""The evidence window: which of a capture's timed evidence tells about *now*.

Logs reach back hours (journald six hours, an 8 MiB tail of a file), so a line written by an
incident that is over must not set today's verdict. Each service's window starts at
``--since`` when one was given, else at the later of the server's own start time and
LOOKBACK_S before the capture started. Log signature hits, the router's breaker transitions
and worker errors, the kernel's events, and Flight Recorder dumps (by their newest entry) from
before the window are kept as *history*: the report and the analysis show them, no rule judges
them. Live evidence (/metrics samples, probes, stacks, ps) is always inside the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pdforensics.parsers.journal import SignatureHit, parse_log_timestamp, split_log_signatures
from pdforensics.parsers.router_log import RouterLog
from pdforensics.views.hostclock import hits_on_capture_clock, to_capture_clock

if TYPE_CHECKING:
    from pdforensics.bundle.ondisk import ResultEntry
    from pdforensics.views.loaded import HostView, ServiceView

#: how far back the logs count when no --since is given and the server started earlier:
#: two of SGLang's 300 s PD timeouts, so a wedge's first timeout lines are inside it, and a
#: cluster that recovered reads HEALTHY ten minutes later without a restart
LOOKBACK_S = 600.0

TextOf = Callable[["ResultEntry"], str]


@dataclass(frozen=True)
class Since:
    """``--since``: a duration before a reference time (the capture's start), or a time."""

    text: str  # as given, for the manifest and messages
    seconds_before: float | None = None
    epoch: float | None = None

    def at(self, reference: float) -> float:
        """The window's start for a capture (or the newest evidence) at ``reference``."""
        if self.epoch is not None:
            return self.epoch
        return reference - (self.seconds_before or 0.0)


def parse_since(text: str) -> Since:
    """``30m``, ``2h``, ``1h30m``, seconds, or a time: ``2026-12-04T16:47:00Z``, ``2026-12-04
    16:47``, ISO with an offset; a time without a zone is UTC. ValueError when neither."""
    from datetime import datetime, timezone

    from pdforensics.durations import parse_duration
    from pdforensics.errors import ConfigError

    raw = text.strip()
    try:
        return Since(raw, seconds_before=parse_duration(raw))
    except ConfigError:
        pass
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" UTC", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: neither a duration (30m, 2h, 1h30m) nor a time "
                         "(2026-12-04T16:47:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return Since(raw, epoch=when.timestamp())


@dataclass(frozen=True)
class Window:
    """How the window is chosen: an explicit start (``--since``, on our clock) or the
    look-back bounded by each server's start time."""

    since: float | None = None
    lookback_s: float = LOOKBACK_S

    def start(self, captured_at: float, server_start: float | None) -> tuple[float, str]:
        """(the window's start, how it was chosen) for one service."""
        if self.since is not None:
            return self.since, "--since"
        lookback = captured_at - self.lookback_s
        if server_start is not None and server_start > lookback:
            return server_start, "server start"
        return lookback, f"look-back {self.lookback_s / 60:g} min"


def server_start(s: ServiceView) -> float | None:
    """When the service's main process started (ps, on our clock), else its unit did."""
    root = s.root
    if root is not None and root.info.start_epoch is not None:
        return root.info.start_epoch
    u = s.systemd
    for ts in (u.exec_main_start, u.active_enter) if u is not None else ():
        if ts is not None and ts.epoch is not None:
            return ts.epoch
    return None


def split_hits(hits: Sequence[SignatureHit], start: float, text: Callable[[], str],
               offset_s: float | None) -> tuple[tuple[SignatureHit, ...], tuple[SignatureHit, ...]]:
    """(hits inside the window, hits before it). The log is scanned again only when a
    signature has lines on both sides; a hit inside keeps the start of its run, which may
    lie before the window (one incident that has lasted longer than the look-back)."""
    before = [h for h in hits if h.last_epoch is not None and h.last_epoch < start]
    inside = [h for h in hits if h.first_epoch is None or h.first_epoch >= start]
    if len(before) + len(inside) == len(hits):
        return tuple(inside), tuple(before)
    host_start = start + (offset_s or 0.0)  # the host's clock, as its lines are stamped
    now_host, old_host = split_log_signatures(text(), host_start)
    now = hits_on_capture_clock(now_host, offset_s)
    old = hits_on_capture_clock(old_host, offset_s)
    runs = {h.key: h.run_start for h in hits}
    return tuple(replace(h, run_start=runs.get(h.key, h.run_start)) for h in now), old


def _stamp(text: str | None, offset_s: float | None) -> float | None:
    return to_capture_clock(parse_log_timestamp(text), offset_s) if text else None


def split_router_log(log: RouterLog, start: float, offset_s: float | None
                     ) -> tuple[RouterLog, RouterLog | None]:
    """(the router log's transitions and tallies inside the window, those before it);
    an entry without a time stays inside."""
    def old(t: float | None) -> bool:
        return t is not None and t < start

    tr_old = tuple(t for t in log.transitions if old(_stamp(t.time, offset_s)))
    ta_old = tuple(t for t in log.tallies if old(_stamp(t.last_time, offset_s)))
    if not tr_old and not ta_old:
        return log, None
    now = replace(log, transitions=tuple(t for t in log.transitions if t not in tr_old),
                  tallies=tuple(t for t in log.tallies if t not in ta_old))
    return now, RouterLog(transitions=tr_old, tallies=ta_old, lines=log.lines)


def window_service(s: ServiceView, window: Window, captured_at: float, offset_s: float | None,
                   text_of: TextOf) -> ServiceView:
    """The service with its timed log evidence split at its window's start."""
    start, how = window.start(captured_at, server_start(s))
    entry = s.log_entry
    hits, history = split_hits(s.log_hits, start,
                               lambda: text_of(entry) if entry is not None else "", offset_s)
    router_log, router_old = (split_router_log(s.router_log, start, offset_s)
                              if s.router_log is not None else (None, None))
    return replace(s, log_hits=hits, log_history=history, router_log=router_log,
                   router_log_history=router_old, window_start=start, window_from=how)


def window_host(h: HostView, window: Window, captured_at: float, text_of: TextOf) -> HostView:
    """Every service of the host windowed; Xids, kernel events and Flight Recorder dumps
    (by their newest entry) before the earliest window of the host's services (the look-back
    when it runs none) become its history. A dump without a dated entry stays."""
    services = tuple(window_service(s, window, captured_at, h.clock_offset_s, text_of)
                     for s in h.services)
    starts = [s.window_start for s in services if s.window_start is not None]
    start = min(starts) if starts else window.start(captured_at, None)[0]
    old = tuple(x for x in h.xids if x.epoch is not None and x.epoch < start)
    old_fr = tuple((p, d) for p, d in h.flight_recorder
                   if (t := to_capture_clock(d.newest_epoch, h.clock_offset_s)) is not None
                   and t < start)
    # kernel events stay in the log: those before `start` are its history (kernel_history)
    return replace(h, services=services, xids=tuple(x for x in h.xids if x not in old),
                   xid_history=old, window_start=start,
                   flight_recorder=tuple(x for x in h.flight_recorder if x not in old_fr),
                   fr_history=old_fr)


def line_stamp(line: str) -> float | None:
    """The time a log line opens with (a bracket or a digit first), else None."""
    return parse_log_timestamp(line) if line[:1] in "[0123456789" else None


def window_text(text: str, start: float | None, offset_s: float | None = None) -> str:
    """The log text with every line stamped (or following a line stamped) before ``start``
    blanked out, line numbers kept: what a reader of the whole text (the PD request-path
    model) may judge. Lines before the first stamp are kept (their time is unknown)."""
    if start is None or not text:
        return text
    host_start = start + (offset_s or 0.0)
    out: list[str] = []
    current: float | None = None
    for line in text.split("\n"):
        stamp = line_stamp(line)
        if stamp is not None:
            current = stamp
        out.append("" if current is not None and current < host_start else line)
    return "\n".join(out)
