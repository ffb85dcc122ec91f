"""A tiny SVG element builder that escapes every attribute value and text node.

Charts are built from ``el()`` calls only, so text that came from a host (a cmdline, a
log line, a metric label) can never become markup: it is escaped where it enters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from markupsafe import Markup, escape

Child = str | Markup | None


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def el(tag: str, attrs: dict[str, object] | None = None, *children: Child) -> Markup:
    """``<tag a="v">children</tag>``; str children and all attribute values are escaped."""
    parts = [f"<{tag}"]
    for k, v in (attrs or {}).items():
        if v is None or v is False:
            continue
        val = _num(v) if isinstance(v, int | float) and not isinstance(v, bool) else str(v)
        parts.append(f' {k.rstrip("_").replace("_", "-")}="{escape(val)}"')
    body = "".join(str(c) if isinstance(c, Markup) else str(escape(c)) for c in children
                   if c is not None)
    if not body and tag not in ("text", "title", "tspan", "g", "svg", "a"):
        return Markup("".join(parts) + "/>")
    return Markup("".join(parts) + ">" + body + f"</{tag}>")


def group(children: Iterable[Markup], **attrs: object) -> Markup:
    return el("g", dict(attrs), *children)


def svg(width: float, height: float, children: Iterable[Markup], label: str,
        cls: str = "chart") -> Markup:
    """A root ``<svg>`` with a viewBox, an accessible label and a <title>."""
    return el("svg", {"xmlns": "http://www.w3.org/2000/svg", "class": cls, "role": "img",
                      "viewBox": f"0 0 {_num(float(width))} {_num(float(height))}",
                      "width": width, "height": height, "aria-label": label},
              el("title", None, label), *children)


def text(x: float, y: float, s: str, cls: str | None = None, anchor: str | None = None,
         tip: str | None = None) -> Markup:
    t = el("text", {"x": x, "y": y, "class": cls, "text-anchor": anchor}, s)
    return el("g", None, el("title", None, tip), t) if tip else t


def rect(x: float, y: float, w: float, h: float, cls: str | None = None,
         tip: str | None = None, rx: float | None = None) -> Markup:
    attrs: dict[str, object] = {"x": x, "y": y, "width": max(w, 0.0), "height": max(h, 0.0),
                                "class": cls, "rx": rx}
    if tip:
        return el("rect", attrs, el("title", None, tip))
    return el("rect", attrs)


def line(x1: float, y1: float, x2: float, y2: float, cls: str | None = None,
         tip: str | None = None) -> Markup:
    attrs: dict[str, object] = {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "class": cls}
    return el("line", attrs, el("title", None, tip)) if tip else el("line", attrs)


def circle(cx: float, cy: float, r: float, cls: str | None = None,
           tip: str | None = None) -> Markup:
    attrs: dict[str, object] = {"cx": cx, "cy": cy, "r": r, "class": cls}
    return el("circle", attrs, el("title", None, tip)) if tip else el("circle", attrs)


def sparkline(values: Sequence[float | None], width: int = 90, height: int = 22,
              frozen: bool = False) -> Markup:
    """A polyline of the samples (gaps for failed scrapes) with a dot on the last value."""
    pts = [(i, v) for i, v in enumerate(values) if v is not None]
    if not pts:
        return Markup("")
    lo = min(v for _i, v in pts)
    hi = max(v for _i, v in pts)
    span = hi - lo or 1.0
    n = max(len(values) - 1, 1)
    pad = 3.0

    def xy(i: int, v: float) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * i / n
        y = height - pad - (height - 2 * pad) * ((v - lo) / span if hi != lo else 0.5)
        return x, y

    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(i, v) for i, v in pts))
    cls = "spark frozen" if frozen else "spark"
    lx, ly = xy(*pts[-1])
    return el("svg", {"xmlns": "http://www.w3.org/2000/svg", "class": cls, "width": width,
                      "height": height, "viewBox": f"0 0 {width} {height}", "aria-hidden": "true"},
              el("polyline", {"points": coords, "class": "spark-line"}),
              el("circle", {"cx": lx, "cy": ly, "r": 2, "class": "spark-dot"}))


def bar(x: float, y: float, w: float, h: float, frac: float | None, cls: str,
        tip: str) -> list[Markup]:
    """A track plus a filled share of it; an unknown share draws a hatched track."""
    if frac is None:
        return [rect(x, y, w, h, "bar-track unknown", tip, rx=2)]
    f = min(max(frac, 0.0), 1.0)
    return [rect(x, y, w, h, "bar-track", tip, rx=2), rect(x, y, w * f, h, cls, tip, rx=2)]
