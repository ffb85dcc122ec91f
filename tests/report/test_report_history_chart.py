"""Charts of the Prometheus history: one SVG per series, events marked, labels escaped."""

from __future__ import annotations

import json
from pathlib import Path

from pdforensics.prometheus.history import HISTORY_FILE, History, HistoryEvent, HistoryLine, HistorySeries, history_json
from pdforensics.report.history_chart import build_history
from pdforensics.views.loaded import load_capture

EVIL = '"><script>alert(1)</script>'


def bundle(tmp_path: Path, history: History | None) -> Path:
    b = tmp_path / "b"
    b.mkdir()
    (b / "manifest.json").write_text(json.dumps({"cluster": "lab", "started_epoch": 1100.0,
                                                 "hosts": [], "results": []}))
    if history is not None:
        (b / HISTORY_FILE).parent.mkdir(parents=True)
        (b / HISTORY_FILE).write_text(json.dumps(history_json(history)))
    return b


def hist() -> History:
    q = HistorySeries("decode_transfer_queue", "decode transfer queue", "gauge", "requests", "q", None,
                      None, (HistoryLine((("instance", "h:1"),), ((1000, 0), (1050, 14), (1100, 14))),
                             HistoryLine((("instance", EVIL),), ((1000, 1), (1100, 2)))))
    empty = HistorySeries("router_errors", "router errors/s", "rate", "1/s", "q", None, None, ())
    bad = HistorySeries("token_usage", "KV cache token usage", "gauge", "ratio", "q", None,
                        "HTTP 400: parse error", ())
    return History("http://p:9090", 1000.0, 1100.0, 1.0, 120.0, (q, empty, bad),
                   (HistoryEvent("decode_transfer_queue", "h:1", 1050.0, "at 14 from here on"),))


def test_one_chart_per_series_with_points(tmp_path: Path) -> None:
    view, missing = build_history(load_capture(bundle(tmp_path, hist())))
    assert view is not None
    assert [c.key for c in view.charts] == ["decode_transfer_queue"]
    chart = str(view.charts[0].svg)
    assert chart.count("<polyline") == 2 and chart.count('class="history-event"') == 1
    assert "capture started" in chart
    assert "<script>" not in chart and "&lt;script&gt;" in chart
    assert [c for c, _n in view.charts[0].legend] == ["#1f77b4", "#d62728"]
    assert missing == ["KV cache token usage: HTTP 400: parse error"]
    assert [(r.series, r.text) for r in view.events] == [("decode_transfer_queue", "at 14 from here on")]


def test_a_bundle_without_history_says_so(tmp_path: Path) -> None:
    view, missing = build_history(load_capture(bundle(tmp_path, None)))
    assert view is None and "--prometheus" in missing[0]


def test_the_report_draws_the_history_section(tmp_path: Path) -> None:
    from pdforensics.report import render

    page = render(load_capture(bundle(tmp_path, hist())))
    sec = page.split('<section id="history"', 1)[1].split("</section>", 1)[0]
    assert sec.count("<svg") == 1 and "decode transfer queue" in sec
    assert "HTTP 400: parse error" in sec  # the failed series is listed as missing, with why
    assert "<script>alert(1)" not in page and "at 14 from here on" in sec
    (tmp_path / "x").mkdir()
    none = render(load_capture(bundle(tmp_path / "x", None)))
    assert "no Prometheus history in this bundle" in none.split('<section id="history"', 1)[1]
