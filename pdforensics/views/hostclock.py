"""Host times on the capturing machine's clock.

A host's clock offset (its clock minus ours, measured once per capture: source ``clock``,
``HostView.clock_offset_s``) is taken off every time the host itself wrote: systemd unit
timestamps, log-signature first/last times (log trends included), kernel Xid times and the
times of stacks harvested from its logs. Times we took (sample and py-spy start times, process
start times from ``ps`` elapsed seconds) are already on our clock and are left alone.

`to_capture_clock` is the one mapping; `on_capture_clock` applies it to a host's view when the
capture is loaded (loaded.py), so the timeline, the report, the rules and diff see one clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, overload

from pdforensics.parsers.journal import SignatureHit
from pdforensics.parsers.systemd import Timestamp, UnitState

if TYPE_CHECKING:
    from pdforensics.views.loaded import HostView, ServiceView

#: offsets under this many seconds are called "in step" in the report
NOTE_S = 0.05


@overload
def to_capture_clock(t: float, offset_s: float | None) -> float: ...
@overload
def to_capture_clock(t: float | None, offset_s: float | None) -> float | None: ...
def to_capture_clock(t: float | None, offset_s: float | None) -> float | None:
    """A time the host wrote (epoch seconds on its clock) on the capturing machine's clock."""
    if t is None or not offset_s:
        return t
    return t - offset_s


def _stamp(ts: Timestamp | None, offset_s: float) -> Timestamp | None:
    if ts is None or ts.epoch is None:
        return ts
    return replace(ts, epoch=to_capture_clock(ts.epoch, offset_s))


def _unit(u: UnitState | None, offset_s: float) -> UnitState | None:
    if u is None:
        return None
    return replace(u, active_enter=_stamp(u.active_enter, offset_s),
                   exec_main_start=_stamp(u.exec_main_start, offset_s),
                   inactive_enter=_stamp(u.inactive_enter, offset_s),
                   state_change=_stamp(u.state_change, offset_s))


def hits_on_capture_clock(hits: Sequence[SignatureHit], offset_s: float | None
                          ) -> tuple[SignatureHit, ...]:
    """Log signature hits with their first/last/run times on our clock."""
    if not offset_s:
        return tuple(hits)
    return tuple(replace(h, first_epoch=to_capture_clock(h.first_epoch, offset_s),
                         last_epoch=to_capture_clock(h.last_epoch, offset_s),
                         run_start=to_capture_clock(h.run_start, offset_s)) for h in hits)


def _service(s: ServiceView, offset_s: float) -> ServiceView:
    return replace(s, systemd=_unit(s.systemd, offset_s),
                   log_hits=hits_on_capture_clock(s.log_hits, offset_s))


def on_capture_clock(h: HostView) -> HostView:
    """The host's view with the times it wrote moved onto our clock (its offset taken off).
    Harvested log stacks keep their text stamp: analysis/log_stacks.py maps it the same way."""
    off = h.clock_offset_s
    if not off:
        return h
    xids = tuple(replace(x, epoch=to_capture_clock(x.epoch, off)) for x in h.xids)
    kernel = h.kernel
    if kernel is not None:
        kernel = replace(kernel, events=tuple(replace(e, epoch=to_capture_clock(e.epoch, off))
                                              for e in kernel.events))
    return replace(h, services=tuple(_service(s, off) for s in h.services), xids=xids,
                   kernel=kernel)


def describe_offset(offset_s: float) -> str:
    """`+90.012 s (ahead)`: a host's clock minus ours, as the report words it."""
    way = "ahead" if offset_s >= NOTE_S else "behind" if offset_s <= -NOTE_S else "in step"
    return f"{offset_s:+.3f} s ({way})"


def clock_note(hosts: Sequence[HostView]) -> str:
    """One sentence for the report: that host times are corrected, and by how much per host."""
    measured = [(h.name, h.clock_offset_s) for h in hosts if h.clock_offset_s is not None]
    unread = [h.name for h in hosts if h.clock_offset_s is None and h.reachable]
    if not measured:
        return "Host clocks were not read: host times (unit starts, log lines) are as each host wrote them."
    text = ("Times are on the capturing machine's clock: each host's own times (unit starts, "
            "log lines, Xids) are corrected by its measured clock offset, "
            + ", ".join(f"{name} {describe_offset(off)}" for name, off in measured) + ".")
    if unread:
        text += f" Not read, times as written: {', '.join(unread)}."
    return text
