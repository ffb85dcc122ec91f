"""Timeline: (re)starts per role, log signature spans, metric samples, the capture, changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from markupsafe import Markup

from pdforensics.diff.compare import Change
from pdforensics.report import svg
from pdforensics.report.changes import Baseline, show
from pdforensics.report.common import hms, href, utc
from pdforensics.views.hostclock import clock_note
from pdforensics.views.loaded import LoadedCapture, ServiceView


@dataclass(frozen=True)
class Event:
    at: float
    kind: str  # start | restart | unit | sample | sample-bad | stack | change | baseline
    tip: str
    end: float | None = None  # a span (log signature first..last)


@dataclass
class Row:
    label: str
    cls: str
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class SignatureRow:
    server: str
    key: str
    kind: str  # cause | consequence
    count: int
    first: str
    last: str
    ranks: str
    sample: str
    href: str | None


@dataclass(frozen=True)
class TimelineView:
    history: Markup
    window: Markup
    span: str
    marks: tuple[tuple[str, str, str], ...]  # (time, row, what) as a table for print/reading
    signatures: tuple[SignatureRow, ...]
    has_changes: bool
    clock: str = ""  # which host times were corrected by that host's clock offset, and by how much


def _service_rows(s: ServiceView) -> tuple[Row, list[Row]]:
    row = Row(f"{s.role}:{s.port} {s.host}", f"role-{s.role}")
    root = s.root
    root_start = root.info.start_epoch if root is not None else None
    for p in s.processes:
        t = p.info.start_epoch
        if t is None:
            continue
        if p is root:
            row.events.append(Event(t, "start", f"{utc(t)}: {s.role} server pid {p.info.pid} "
                                               f"started"))
        elif root_start is not None and t - root_start > 5:
            row.events.append(Event(t, "restart", f"{utc(t)}: {p.info.rank or p.info.kind} pid "
                                                  f"{p.info.pid} started after the server"))
    u = s.systemd
    if u is not None:
        for name, ts in (("active since", u.active_enter), ("main process started",
                                                            u.exec_main_start)):
            if ts is not None and ts.epoch:
                row.events.append(Event(ts.epoch, "unit", f"{utc(ts.epoch)}: unit {u.id} {name}"
                                        + (f" (restarts: {u.n_restarts})" if u.n_restarts else "")))
    for i, m in enumerate(s.metrics, 1):
        ok = m.snapshot is not None
        row.events.append(Event(m.taken_at, "sample" if ok else "sample-bad",
                                f"{utc(m.taken_at)}: /metrics sample {i}"
                                + ("" if ok else " failed")))
    for p in s.processes:
        for st in p.stacks:
            row.events.append(Event(st.taken_at, "stack", f"{utc(st.taken_at)}: py-spy pid "
                                                          f"{p.info.pid} {p.info.rank or ''}"))
    sig_rows = []
    for h in s.log_hits:
        if h.first_epoch is None:
            continue
        r = Row(f"{h.key} ({s.role})", f"sig-{h.kind}")
        r.events.append(Event(h.first_epoch, f"sig {h.kind}",
                              f"{h.key} on {s.label}: {h.count}x, first {utc(h.first_epoch)}, "
                              f"last {utc(h.last_epoch)}", end=h.last_epoch))
        sig_rows.append(r)
    for h in s.log_history:  # before the evidence window: drawn grey, never judged
        if h.first_epoch is None:
            continue
        r = Row(f"{h.key} ({s.role}, history)", "sig-history")
        r.events.append(Event(h.first_epoch, "sig history",
                              f"{h.key} on {s.label} before the evidence window: {h.count}x, "
                              f"first {utc(h.first_epoch)}, last {utc(h.last_epoch)}",
                              end=h.last_epoch))
        sig_rows.append(r)
    return row, sig_rows


def _ticks(t0: float, t1: float) -> list[float]:
    span = t1 - t0
    for step in (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400,
                 172800, 604800):
        if span / step <= 8:
            break
    first = (int(t0 / step) + 1) * step
    out: list[float] = []
    t = float(first)
    while t < t1 and len(out) < 12:
        out.append(t)
        t += step
    return out


def _tick_label(t: float, span: float) -> str:
    d = datetime.fromtimestamp(t, timezone.utc)
    if span > 2 * 86400:
        return d.strftime("%m-%d %H:%M")
    if span < 30:
        return d.strftime("%H:%M:%S")
    return d.strftime("%H:%M:%S") if span < 600 else d.strftime("%H:%M")


def chart(rows: list[Row], t0: float, t1: float, cap: tuple[float, float], label: str) -> Markup:
    """One swimlane per row over [t0, t1]; the capture drawn as a shaded band."""
    left, width, rh = 210.0, 760.0, 20.0
    t1 = max(t1, t0 + 1.0)

    def x(t: float) -> float:
        return left + width * (min(max(t, t0), t1) - t0) / (t1 - t0)

    height = 34 + rh * len(rows)
    parts: list[Markup] = []
    cx0, cx1 = x(cap[0]), x(cap[1])
    parts.append(svg.rect(cx0, 4, max(cx1 - cx0, 2.0), height - 24, "capture-band",
                          f"capture {utc(cap[0])} – {hms(cap[1])}"))
    parts.append(svg.text(min(cx0 + 3, left + width - 40), 14, "capture", "band-label"))
    for t in _ticks(t0, t1):
        parts.append(svg.line(x(t), 18, x(t), height - 18, "grid"))
        parts.append(svg.text(x(t), height - 6, _tick_label(t, t1 - t0), "tick", "middle"))
    for i, r in enumerate(rows):
        y = 22 + i * rh
        parts.append(svg.rect(0, y, left + width, rh, "lane" + (" alt" if i % 2 else "")))
        parts.append(svg.text(4, y + 14, r.label[:34], f"lane-label {r.cls}", tip=r.label))
        for e in r.events:
            if e.end is not None:
                a, b = x(e.at), x(e.end)
                parts.append(svg.rect(a, y + 5, max(b - a, 3.0), rh - 10, e.kind, e.tip, rx=2))
            elif e.kind in ("start", "restart", "unit", "change"):
                parts.append(svg.el("path", {
                    "d": f"M{x(e.at):.1f},{y + 3} l5,7 l-5,7 l-5,-7 z", "class": f"mark {e.kind}"},
                    svg.el("title", None, e.tip)))
            elif e.kind == "baseline":
                parts.append(svg.line(x(e.at), y + 1, x(e.at), y + rh - 1, "mark baseline", e.tip))
            elif e.kind == "stack":
                parts.append(svg.line(x(e.at), y + 4, x(e.at), y + rh - 4, "mark stack", e.tip))
            else:
                parts.append(svg.circle(x(e.at), y + rh / 2, 3.5, f"mark {e.kind}", e.tip))
    return svg.svg(left + width + 40, height, parts, label, cls="chart timeline")


def _change_rows(capture: LoadedCapture, changes: Sequence[Change],
                 baseline: Baseline | None) -> Row:
    """Changes on one lane: at the (re)start of the service they apply to, when that came
    after the baseline (the moment a flag or env var took effect), else at the capture."""
    since = baseline.taken_at if baseline is not None else None
    starts: dict[str, float] = {}
    for s in capture.services():
        root = s.root
        t = root.info.start_epoch if root is not None else None
        if t is not None and (since is None or t >= since):
            for scope in (f"{s.host}/{s.role}", f"{s.host}/{s.role}:{s.port}"):
                starts[scope] = t
    at_capture = capture.started_at
    groups: dict[float, list[str]] = {}
    for c in changes:
        t = starts.get(c.scope, at_capture)
        groups.setdefault(t, []).append(f"{c.scope} {c.kind} {c.key}: {show(c.before)} → "
                                        f"{show(c.after)}")
    row = Row("changes since baseline", "changes")
    if since:
        row.events.append(Event(since, "baseline", f"{utc(since)}: baseline "
                                                   f"{baseline.name if baseline else ''}"))
    for t, lines in sorted(groups.items()):
        when = "took effect at the restart" if t != at_capture else "changed before this capture"
        more = f" … {len(lines) - 8} more" if len(lines) > 8 else ""
        row.events.append(Event(t, "change", f"{utc(t)}: {len(lines)} change(s), {when}: "
                                             + "; ".join(lines[:8]) + more))
    return row


def _signatures(capture: LoadedCapture, prefix: str) -> tuple[SignatureRow, ...]:
    out = []
    for s in capture.services():
        link = href(prefix, s.log_entry.path) if s.log_entry is not None else None
        for h in s.log_hits:
            out.append(SignatureRow(server=s.label, key=h.key, kind=h.kind, count=h.count,
                                    first=utc(h.first_epoch), last=utc(h.last_epoch),
                                    ranks=", ".join(h.ranks),
                                    sample=(h.samples[0] if h.samples else "")[:400], href=link))
        for h in s.log_history:
            out.append(SignatureRow(server=s.label, key=h.key, kind="history", count=h.count,
                                    first=utc(h.first_epoch), last=utc(h.last_epoch),
                                    ranks=", ".join(h.ranks),
                                    sample=(h.samples[0] if h.samples else "")[:400], href=link))
    order = {"cause": 0, "consequence": 1, "history": 3}
    return tuple(sorted(out, key=lambda r: (order.get(r.kind, 2), r.first, r.server)))


def build_timeline(capture: LoadedCapture, changes: Sequence[Change] | None = None,
                   baseline: Baseline | None = None, prefix: str = ""
                   ) -> tuple[TimelineView | None, list[str]]:
    """Two swimlane charts (whole history, capture window), the events and log signatures."""
    rows: list[Row] = []
    sig_rows: list[Row] = []
    for s in capture.services():
        r, sr = _service_rows(s)
        rows.append(r)
        sig_rows.extend(sr)
    cap = (capture.started_at, capture.finished_at or capture.started_at)
    if changes:
        rows.append(_change_rows(capture, changes, baseline))
    rows.extend(sig_rows)
    missing = []
    if not rows:
        return None, ["no services captured: nothing to put on a timeline"]
    if not sig_rows:
        missing.append("no known log signature found in the captured logs"
                       if any(s.log_source for s in capture.services())
                       else "no logs captured (no unit journal or log file found)")
    times = [t for r in rows for e in r.events for t in (e.at, e.end) if t]
    times += [cap[0], cap[1]]
    t0, t1 = min(times), max(times)
    pad = max((t1 - t0) * 0.02, 0.5)
    history = chart(rows, t0 - pad, t1 + pad, cap, "Timeline: starts, log signatures, samples")
    wpad = max((cap[1] - cap[0]) * 0.05, 0.5)
    window = chart(rows, cap[0] - wpad, cap[1] + wpad, cap, "Timeline of the capture window")
    marks = sorted(((e.at, utc(e.at), r.label, e.tip) for r in rows for e in r.events
                    if e.kind not in ("sample", "stack")), key=lambda m: m[0])
    return TimelineView(history=history, window=window, span=f"{utc(t0)} – {utc(t1)}",
                        marks=tuple((w, lane, tip) for _t, w, lane, tip in marks),
                        signatures=_signatures(capture, prefix),
                        has_changes=bool(changes), clock=clock_note(capture.hosts)), missing
