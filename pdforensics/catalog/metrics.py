"""Extract Prometheus metric declarations (`Gauge(name=..., documentation=...)` etc.)."""

from __future__ import annotations

import ast

from pdforensics.catalog.literals import Evaluator, string_value, text
from pdforensics.catalog.model import MetricInfo, MetricType

# constructor name (last dotted part) -> metric type
_CTORS: dict[str, MetricType] = {
    "Gauge": "gauge", "Counter": "counter", "Histogram": "histogram", "Summary": "summary",
    "GaugeHistogram": "gauge",
    "_PromGauge": "gauge", "_PromCounter": "counter", "_PromHistogram": "histogram",
    "_PromSummary": "summary",
}
# Files worth parsing: they mention one of these.
HINTS = ("prometheus_client", "Gauge(", "Histogram(", "Summary(", "documentation=")


def exposed(declared: str, mtype: MetricType, namespace: str = "", subsystem: str = "") -> str:
    """The family name prometheus_client exposes in the text format for a declaration."""
    full = "_".join(p for p in (namespace, subsystem, declared) if p)
    if mtype == "counter":
        return full.removesuffix("_total") + "_total"
    return full


def samples(name: str, mtype: MetricType) -> tuple[str, ...]:
    """Sample names one family shows on /metrics (prometheus_client text format)."""
    if mtype == "counter":
        base = name.removesuffix("_total")
        return (name, base + "_created")
    if mtype == "histogram":
        return (name + "_bucket", name + "_count", name + "_sum", name + "_created")
    if mtype == "summary":  # prometheus_client's Summary has no quantiles
        return (name + "_count", name + "_sum", name + "_created")
    return (name,)


def _labels(node: ast.AST | None, ev: Evaluator) -> tuple[tuple[str, ...], str | None]:
    """Literal label names and the source text of the parts known only at runtime."""
    if node is None:
        return (), None
    literal: list[str] = []
    runtime: list[str] = []

    def walk(n: ast.AST) -> None:
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            walk(n.left)
            walk(n.right)
            return
        ok, v = ev.try_value(n)
        if ok and isinstance(v, list) and all(isinstance(x, str) for x in v):
            literal.extend(v)
        elif ok and isinstance(v, dict):
            literal.extend(v)
        else:
            runtime.append(text(n) or "<expr>")

    walk(node)
    return tuple(literal), (" + ".join(runtime) if runtime else None)


def extract_metrics(tree: ast.Module, rel: str, ev: Evaluator) -> list[MetricInfo]:
    """Every metric constructor call with a literal name and a documentation string."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        ctor = (text(node.func) or "").rsplit(".", 1)[-1]
        mtype = _CTORS.get(ctor)
        if mtype is None:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        name_node = kw.get("name", node.args[0] if node.args else None)
        doc_node = kw.get("documentation", node.args[1] if len(node.args) > 1 else None)
        declared = string_value(name_node, ev)
        if declared is None or doc_node is None:
            continue  # collections.Counter(...), wrappers taking a variable name
        label_node = kw.get("labelnames", node.args[2] if len(node.args) > 2 else None)
        labels, labels_expr = _labels(label_node, ev)
        if ctor == "GaugeHistogram":
            labels = labels + ("gt", "le")
        doc = string_value(doc_node, ev)
        namespace = string_value(kw.get("namespace"), ev) or ""
        subsystem = string_value(kw.get("subsystem"), ev) or ""
        name = exposed(declared, mtype, namespace, subsystem)
        out.append(MetricInfo(
            name=name, declared=declared, type=mtype,
            help=doc if doc is not None else text(doc_node),
            labels=labels, labels_expr=labels_expr, samples=samples(name, mtype),
            origin=f"{rel}:{node.lineno}",
        ))
    return out
