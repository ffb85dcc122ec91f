"""Topology: router -> prefill(s) -> decode(s), each with health, in-flight and queues."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from pdforensics.analysis.metrics_view import WORK_GAUGES, gauge, progress, work_in_flight
from pdforensics.analysis.router_view import router_in_flight, worker_breakers
from pdforensics.report import svg
from pdforensics.report.common import fetch_state, host_id, num, service_id
from pdforensics.report.pods import PodRow, pod_rows
from pdforensics.views.loaded import HostView, LoadedCapture, ServiceView

# (label, metric) shown per role, in order
QUEUES: dict[str, tuple[tuple[str, str], ...]] = {
    "prefill": (("bootstrap q", "sglang:num_prefill_bootstrap_queue_reqs"),
                ("inflight q", "sglang:num_prefill_inflight_queue_reqs"),
                ("waiting", "sglang:num_queue_reqs")),
    "decode": (("prealloc q", "sglang:num_decode_prealloc_queue_reqs"),
               ("transfer q", "sglang:num_decode_transfer_queue_reqs"),
               ("waiting", "sglang:num_queue_reqs")),
    "unified": (("waiting", "sglang:num_queue_reqs"),),
    "router": (),
}
_COLUMNS = {"router": 0, "prefill": 1, "unified": 1, "decode": 2}


@dataclass(frozen=True)
class NodeView:
    anchor: str
    host: str
    role: str
    port: int | None
    state: str  # ok | stuck | bad | hung | missing | unreachable
    health: str
    server_info: str | None
    in_flight: str
    queues: tuple[tuple[str, str], ...]
    note: str | None  # unreachable reason, missing process ...
    processes: int
    ranks: str


@dataclass(frozen=True)
class TopologyView:
    nodes: tuple[NodeView, ...]
    diagram: Markup
    pods: tuple[PodRow, ...] = ()  # capture --k8s: the pods behind the hosts (report/pods.py)


def last_value(s: ServiceView, metric: str) -> float | None:
    """The gauge in the last good sample (max over tp ranks, summed over dp ranks)."""
    good = s.good_samples
    if not good or good[-1].snapshot is None:
        return None
    return gauge(good[-1].snapshot, metric)


def requests_inside(s: ServiceView) -> float | None:
    """Every request inside a server in the last good sample: running, waiting and in the PD
    queues (bootstrap, inflight, prealloc, transfer); None when no such gauge was read."""
    known = [v for v in (last_value(s, m) for m, _what in WORK_GAUGES) if v is not None]
    return sum(known) if known else None


def _stuck(s: ServiceView) -> str | None:
    """Why a server that answers /health is still stuck: work in flight, progress frozen."""
    if s.kind != "server":
        return None
    prog = progress(s)
    work = work_in_flight(s)
    if not (prog.frozen and work):
        return None
    what = ", ".join(f"{t.last:g} {w}" for w, t in work[:2] if t.last is not None)
    return f"no progress for {prog.span_s:.1f} s with {what}"


def _node(h: HostView, s: ServiceView) -> NodeView:
    state, words = fetch_state(s.fetches.get("health"))
    si = s.fetches.get("server_info") or s.fetches.get("get_server_info")
    si_words = None
    if si is not None:
        si_state, si_words = fetch_state(si)
        if si_state == "hung" and state == "ok":
            state = "hung"
    if s.kind == "router":
        in_flight = router_in_flight(s)
        workers = s.fetches.get("workers")
        body = workers.json() if workers is not None else None
        wl = body.get("workers") if isinstance(body, dict) else body
        queues: tuple[tuple[str, str], ...] = (
            ("workers", str(len(wl)) if isinstance(wl, list) else "—"),)
        breakers = worker_breakers(s)
        if breakers:
            queues += (("breakers open", f"{sum(b.open_now for b in breakers)}/{len(breakers)}"),)
    else:
        in_flight = requests_inside(s)
        queues = tuple((label, num(last_value(s, m))) for label, m in QUEUES.get(s.role, ()))
        ready = s.fetches.get("ready")
        if ready is not None and ready.answered and ready.status != 404:  # 404: older than /ready
            queues += (("ready", "yes" if ready.status == 200 else f"no (HTTP {ready.status})"),)
    notes = []
    stuck = _stuck(s)
    if stuck is not None:
        notes.append(stuck)
        if state == "ok":
            state = "stuck"
    if not s.processes:
        notes.append("no process found")
    elif s.root is None and s.root_pid is not None:
        notes.append(f"root pid {s.root_pid} not seen")
    dead = [p.info.rank or str(p.info.pid) for p in s.ranks if p.info.state in ("Z", "X")]
    if dead:
        notes.append("dead ranks: " + ", ".join(dead))
    note = "; ".join(notes) or None
    ranks = ", ".join(f"{p.info.rank or p.info.pid}:{p.info.state}" for p in s.ranks)
    return NodeView(anchor=service_id(s), host=h.name, role=s.role, port=s.port, state=state,
                    health=words, server_info=si_words, in_flight=num(in_flight), queues=queues,
                    note=note, processes=len(s.processes), ranks=ranks)


def _unreachable(h: HostView, declared: list[dict[str, Any]]) -> list[NodeView]:
    why = h.error or "host not reachable"
    specs = declared or [{"role": "unknown", "port": None}]
    return [NodeView(anchor=host_id(h.name), host=h.name, role=str(d.get("role", "unknown")),
                     port=d.get("port"), state="unreachable", health="unreachable",
                     server_info=None, in_flight="—", queues=(), note=why[:160], processes=0,
                     ranks="") for d in specs]


def build_topology(capture: LoadedCapture) -> tuple[TopologyView, list[str]]:
    """A node per service (or per declared service of an unreachable host) and the diagram."""
    meta = {str(h.get("name")): h for h in capture.bundle.manifest.get("hosts") or []}
    nodes: list[NodeView] = []
    missing: list[str] = []
    for h in capture.hosts:
        declared = list((meta.get(h.name) or {}).get("services") or [])
        if not h.reachable:
            nodes.extend(_unreachable(h, declared))
            missing.append(f"{h.name}: not reachable ({h.error or 'no reason recorded'})")
            continue
        if not h.services:
            missing.append(f"{h.name}: no SGLang service found"
                           + (f" ({'; '.join(h.notes)})" if h.notes else ""))
            for d in declared:
                nodes.append(NodeView(
                    anchor=host_id(h.name), host=h.name, role=str(d.get("role", "unknown")),
                    port=d.get("port"), state="missing", health="not found",
                    server_info=None, in_flight="—", queues=(), note="declared, not found",
                    processes=0, ranks=""))
        nodes.extend(_node(h, s) for s in h.services)
    if not nodes:
        missing.append("no hosts or services in this capture")
    return TopologyView(tuple(nodes), diagram(nodes), pod_rows(capture)), missing


_W, _H, _GAP_X, _GAP_Y, _PAD = 270.0, 134.0, 70.0, 18.0, 16.0


def diagram(nodes: list[NodeView]) -> Markup:
    """Columns router | prefill | decode; arrows for requests and KV transfer."""
    cols: dict[int, list[NodeView]] = {0: [], 1: [], 2: []}
    for n in nodes:
        cols[_COLUMNS.get(n.role, 1)].append(n)
    used = [c for c in (0, 1, 2) if cols[c]] or [1]
    xpos = {c: _PAD + i * (_W + _GAP_X) for i, c in enumerate(used)}
    rows = max(len(cols[c]) for c in used) or 1
    height = _PAD * 2 + 22 + rows * (_H + _GAP_Y)
    width = _PAD * 2 + len(used) * _W + (len(used) - 1) * _GAP_X
    pos: dict[int, tuple[float, float]] = {}
    parts: list[Markup] = [
        el_defs(),
    ]
    heads = {0: "router", 1: "prefill", 2: "decode"}
    for c in used:
        parts.append(svg.text(xpos[c] + 8, _PAD + 10, heads[c].upper(), "col-head"))
        for i, n in enumerate(cols[c]):
            pos[id(n)] = (xpos[c], _PAD + 22 + i * (_H + _GAP_Y))
    edges: list[Markup] = []
    for r in cols[0]:
        rx, ry = pos[id(r)]
        for t in cols[1] + cols[2]:
            tx, ty = pos[id(t)]
            if _COLUMNS.get(t.role, 1) == 1 or not cols[1]:
                edges.append(svg.el("path", {"d": f"M{rx + _W},{ry + _H / 2} L{tx - 4},{ty + _H / 2}",
                                             "class": "edge", "marker-end": "url(#arrow)"}))
            else:  # router -> decode: arc over the prefill column
                top = _PAD + 16
                edges.append(svg.el("path", {
                    "d": f"M{rx + _W / 2},{ry} C{rx + _W / 2},{top} {tx + _W / 2},{top} "
                         f"{tx + _W / 2},{ty - 4}",
                    "class": "edge faint", "marker-end": "url(#arrow)"}))
    for p in cols[1]:
        if p.role != "prefill":
            continue
        px, py = pos[id(p)]
        for d in cols[2]:
            dx, dy = pos[id(d)]
            edges.append(svg.el("path", {"d": f"M{px + _W},{py + _H / 2} L{dx - 4},{dy + _H / 2}",
                                         "class": "edge kv", "marker-end": "url(#arrow)"}))
            edges.append(svg.text((px + _W + dx) / 2, (py + dy + _H) / 2 - 4, "KV", "edge-label",
                                  "middle"))
    parts.extend(edges)
    for n in nodes:
        x, y = pos[id(n)]
        parts.append(_box(n, x, y))
    return svg.svg(width, height, parts, "Cluster topology: router, prefill and decode servers",
                   cls="chart topology")


def el_defs() -> Markup:
    return svg.el("defs", None, svg.el(
        "marker", {"id": "arrow", "viewBox": "0 0 10 10", "refX": 9, "refY": 5,
                   "markerWidth": 7, "markerHeight": 7, "orient": "auto-start-reverse"},
        svg.el("path", {"d": "M0,0 L10,5 L0,10 z", "class": "arrowhead"})))


def _box(n: NodeView, x: float, y: float) -> Markup:
    port = f":{n.port}" if n.port is not None else ""
    tip = f"{n.host} {n.role}{port}: {n.health}" + (f"; {n.note}" if n.note else "")
    lines = [svg.rect(x, y, _W, _H, f"node {n.state}", rx=6, tip=tip),
             svg.rect(x, y, 6, _H, f"node-strip {n.state}"),
             svg.text(x + 14, y + 20, f"{n.role}{port}", "node-title"),
             svg.text(x + _W - 10, y + 20, n.state.upper(), f"node-state {n.state}", "end"),
             svg.text(x + 14, y + 37, n.host, "node-host")]
    if n.state == "unreachable":
        lines.append(svg.text(x + 14, y + 58, _clip(n.note or "", 40), "node-note"))
        return svg.el("a", {"href": f"#{n.anchor}"}, *lines)
    lines.append(svg.text(x + 14, y + 55, "health " + _clip(n.health, 30), "node-kv"))
    if n.server_info:
        lines.append(svg.text(x + 14, y + 70, "server_info " + _clip(n.server_info, 26), "node-kv"))
    q = "  ".join(f"{k} {v}" for k, v in n.queues)
    lines.append(svg.text(x + 14, y + 88, f"in-flight {n.in_flight}", "node-big"))
    lines.append(svg.text(x + 14, y + 106, _clip(q, 44), "node-kv"))
    if n.note:
        lines.append(svg.text(x + 14, y + 124, _clip(n.note, 44), "node-note"))
    return svg.el("a", {"href": f"#{n.anchor}"}, *lines)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
