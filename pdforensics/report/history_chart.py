"""Charts of a bundle's Prometheus history, built like a report section.

``build_history(capture)`` follows the report's section-builder contract (data, missing):
one inline SVG line chart per series (presentation attributes only, no CSS needed), with
the capture marked and the change points (queue onset, throughput drop) as ticks. Text
from Prometheus (label values) enters through the report's escaping SVG builder.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from pdforensics.prometheus.history import History, HistorySeries, load_history
from pdforensics.report import svg
from pdforensics.report.common import hms, utc
from pdforensics.views.loaded import LoadedCapture

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")
MAX_LINES = len(COLORS)
W, H, LEFT, TOP, BOTTOM = 640.0, 150.0, 52.0, 10.0, 22.0


@dataclass(frozen=True)
class HistoryChart:
    key: str
    title: str
    unit: str
    svg: Markup
    legend: tuple[tuple[str, str], ...]  # (color, line name)
    note: str | None


@dataclass(frozen=True)
class HistoryRow:
    at: str
    series: str
    line: str
    text: str


@dataclass(frozen=True)
class HistoryView:
    prometheus: str
    span: str
    step: str
    charts: tuple[HistoryChart, ...]
    events: tuple[HistoryRow, ...]


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def chart_svg(s: HistorySeries, h: History, capture_at: float | None) -> Markup:
    """One series over [h.start, h.end]: a polyline per line, y from 0 (or min) to max."""
    lines = [ln for ln in s.lines if ln.points][:MAX_LINES]
    values = [v for ln in lines for _t, v in ln.points]
    lo = min(0.0, *values) if values else 0.0
    hi = max(values) if values else 1.0
    hi = hi if hi > lo else lo + 1.0
    t0, t1 = h.start, max(h.end, h.start + 1.0)
    pw, ph = W - LEFT - 8, H - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + pw * (min(max(t, t0), t1) - t0) / (t1 - t0)

    def y(v: float) -> float:
        return TOP + ph * (1 - (v - lo) / (hi - lo))

    parts: list[Markup] = [
        svg.line(LEFT, TOP, LEFT, TOP + ph, None), svg.line(LEFT, TOP + ph, LEFT + pw, TOP + ph, None),
        svg.text(LEFT - 4, TOP + 8, _fmt(hi), "tick", "end"),
        svg.text(LEFT - 4, TOP + ph, _fmt(lo), "tick", "end"),
        svg.text(LEFT, H - 6, hms(t0), "tick", "start"),
        svg.text(LEFT + pw, H - 6, hms(t1), "tick", "end"),
    ]
    for i, ln in enumerate(lines):
        pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in ln.points)
        parts.append(svg.el("polyline", {"points": pts, "fill": "none", "stroke": COLORS[i],
                                         "stroke-width": 1.5, "class": "history-line"},
                            svg.el("title", None, f"{ln.name}: last {_fmt(ln.points[-1][1])}")))
    if capture_at is not None:
        parts.append(svg.el("line", {"x1": x(capture_at), "y1": TOP, "x2": x(capture_at),
                                     "y2": TOP + ph, "stroke": "#555", "stroke-dasharray": "4 3"},
                            svg.el("title", None, f"capture started {utc(capture_at)}")))
    for e in h.events:
        if e.key == s.key:
            parts.append(svg.el("path", {"d": f"M{x(e.at):.1f},{TOP + ph} l4,-8 l-8,0 z",
                                         "fill": "#d62728", "class": "history-event"},
                                svg.el("title", None, f"{hms(e.at)} {e.line}: {e.text}")))
    return svg.svg(W, H, parts, f"{s.title} ({s.unit})" if s.unit else s.title, cls="chart history")


def build_history(capture: LoadedCapture) -> tuple[HistoryView | None, list[str]]:
    """The history view of a bundle, or (None, why) when it holds none."""
    h = load_history(capture.path)
    if h is None:
        return None, ["no Prometheus history in this bundle (capture with --prometheus URL)"]
    charts, missing = [], []
    for s in h.series:
        if s.error:
            missing.append(f"{s.title}: {s.error}")
            continue
        if not any(ln.points for ln in s.lines):
            continue
        shown = [ln for ln in s.lines if ln.points]
        note = (f"{len(shown) - MAX_LINES} more lines not drawn" if len(shown) > MAX_LINES else None)
        charts.append(HistoryChart(
            s.key, s.title, s.unit, chart_svg(s, h, capture.started_at or None),
            tuple((COLORS[i], ln.name) for i, ln in enumerate(shown[:MAX_LINES])), note))
    events = tuple(HistoryRow(utc(e.at), e.key, e.line, e.text) for e in h.events)
    if not charts:
        missing.append("Prometheus returned no points for any series in the window")
    view = HistoryView(h.prometheus, f"{utc(h.start)} – {utc(h.end)}", f"{h.step_s:g} s",
                       tuple(charts), events)
    return view, missing
