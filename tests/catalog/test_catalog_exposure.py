"""Exposed names agree with what the real prometheus_client writes on /metrics."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary
from prometheus_client.exposition import generate_latest

from pdforensics.catalog import load_shipped_catalog
from pdforensics.catalog.metrics import exposed, samples
from pdforensics.catalog.model import MetricInfo, MetricType
from tests.catalog.known_entries import PD_COUNTERS, PD_GAUGES

CTORS = {"gauge": Gauge, "counter": Counter, "histogram": Histogram, "summary": Summary}


def _scrape(declared: str, mtype: MetricType) -> tuple[set[str], set[str]]:
    """(# TYPE family names, sample names) prometheus_client exposes for one metric."""
    reg = CollectorRegistry()
    metric = CTORS[mtype](name=declared, documentation="d", registry=reg)
    if mtype == "gauge":
        metric.set(1)
    elif mtype == "counter":
        metric.inc()
    else:
        metric.observe(1.0)
    text = generate_latest(reg).decode()
    # prometheus_client writes `X_created` as its own gauge family; it belongs to X
    families = {ln.split()[2] for ln in text.splitlines()
                if ln.startswith("# TYPE") and not ln.split()[2].endswith("_created")}
    sample_names = {ln.split("{")[0].split()[0] for ln in text.splitlines()
                    if ln and not ln.startswith("#")}
    return families, sample_names


@pytest.mark.parametrize("declared, mtype", [
    ("sglang:a", "gauge"), ("sglang:b", "counter"), ("sglang:c_total", "counter"),
    ("sglang:d_seconds", "histogram"), ("sglang:e", "summary"),
])
def test_exposed_matches_prometheus_client(declared: str, mtype: MetricType) -> None:
    families, sample_names = _scrape(declared, mtype)
    name = exposed(declared, mtype)
    assert families == {name}
    assert sample_names == set(samples(name, mtype))


def test_shipped_pd_metrics_as_prometheus_exposes_them() -> None:
    cat = load_shipped_catalog()
    for key in PD_GAUGES + PD_COUNTERS:
        info: MetricInfo = cat.metrics[key]
        families, sample_names = _scrape(info.declared, info.type)
        assert families == {key}
        assert sample_names == set(info.samples)
