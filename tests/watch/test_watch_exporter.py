"""The watcher's own metrics: names, labels, values, served over HTTP."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from pdforensics.watch.exporter import WatchMetrics


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_families_and_values() -> None:
    m = WatchMetrics("lab")
    m.set_targets([("decode", "decode-0"), ("prefill", "prefill-0")])
    m.suspected("decode", "decode-0", True)
    m.captured("WEDGED", 1234.5)
    m.captured("nonsense", 1300.0)
    m.failed("metrics", 3)
    m.poll_duration.observe(0.02)
    s = samples(m.text())
    assert s[("pdforensics_wedge_suspected", (("cluster", "lab"), ("host", "decode-0"),
                                              ("role", "decode")))] == 1
    assert s[("pdforensics_wedge_suspected", (("cluster", "lab"), ("host", "prefill-0"),
                                              ("role", "prefill")))] == 0
    assert s[("pdforensics_captures_total", (("verdict", "WEDGED"),))] == 1
    assert s[("pdforensics_captures_total", (("verdict", "UNKNOWN"),))] == 1
    assert s[("pdforensics_captures_total", (("verdict", "HEALTHY"),))] == 0  # exists at 0
    assert s[("pdforensics_last_capture_timestamp_seconds", ())] == 1300.0
    assert s[("pdforensics_collector_failures_total", (("source", "metrics"),))] == 3
    assert s[("pdforensics_collector_failures_total", (("source", "workers"),))] == 0
    assert s[("pdforensics_poll_duration_seconds_count", ())] == 1


def test_served_over_http() -> None:
    m = WatchMetrics("lab")
    m.serve(0, "127.0.0.1")
    try:
        assert m.port
        with urllib.request.urlopen(f"http://127.0.0.1:{m.port}/metrics", timeout=5) as r:
            body = r.read().decode()
        assert "pdforensics_poll_duration_seconds_bucket" in body
        assert "pdforensics_last_capture_timestamp_seconds 0.0" in body
    finally:
        m.close()
