"""Prometheus history: query_range answers, change points, the bundle file."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from pdforensics.bundle.ondisk import BundleWriter, load_bundle, verify_bundle
from pdforensics.errors import ConfigError
from pdforensics.prometheus.api import parse_duration
from pdforensics.prometheus.history import (
    HISTORY_FILE,
    SERIES,
    HistorySeries,
    collect_history,
    history_from_json,
    history_json,
    line_events,
    load_history,
    parse_matrix,
    rate_window_for,
    step_for,
)
from pdforensics.redact.redactor import Redactor

# what Prometheus 2.x answers to /api/v1/query_range (values are strings, NaN is "NaN")
ANSWER = {
    "status": "success",
    "data": {"resultType": "matrix", "result": [
        {"metric": {"instance": "127.0.0.1:30001", "job": "sglang", "engine_type": "decode"},
         "values": [[1000, "0"], [1010, "1"], [1020, "14"], [1030, "14"], [1040, "14"]]},
        {"metric": {"instance": "127.0.0.1:30000", "job": "sglang", "engine_type": "prefill"},
         "values": [[1000, "NaN"], [1010, "0"], [1020, "0"]]},
    ]},
}


def series(key: str, rows: list[list[tuple[float, float]]]) -> HistorySeries:
    from pdforensics.prometheus.history import HistoryLine

    spec = next(s for s in SERIES if s.key == key)
    return HistorySeries(key, spec.title, spec.kind, spec.unit, spec.query(120), None, None,
                         tuple(HistoryLine((("instance", f"h:{i}"),), tuple(r))
                               for i, r in enumerate(rows)))


def test_parse_matrix_reads_labels_values_and_drops_nan() -> None:
    lines = parse_matrix(ANSWER["data"])
    assert [ln.label("engine_type") for ln in lines] == ["decode", "prefill"]  # sorted by labels
    assert lines[1].points == ((1010.0, 0.0), (1020.0, 0.0))
    assert lines[0].points[-1] == (1040.0, 14.0)
    assert "127.0.0.1:30001" in lines[0].name and "decode" in lines[0].name
    assert parse_matrix({"resultType": "vector", "result": []}) == ()
    assert parse_matrix(None) == ()


def test_queue_onset_is_where_it_started_to_hold() -> None:
    ev = line_events(series("decode_transfer_queue", [[(0, 0), (10, 1), (20, 14), (30, 14), (40, 14)]]))
    assert [(e.at, e.key) for e in ev] == [(20.0, "decode_transfer_queue")]
    # a queue high over the whole window has no onset inside it
    assert line_events(series("decode_transfer_queue", [[(0, 14), (10, 14), (20, 14)]])) == []


def test_throughput_drop_and_failure_start() -> None:
    pts = [(float(t), 900.0) for t in range(0, 100, 10)] + [(float(t), 0.0) for t in range(100, 150, 10)]
    ev = line_events(series("generation_throughput", [pts]))
    assert [e.at for e in ev] == [100.0] and "dropped from ~900" in ev[0].text
    steady = [(float(t), 900.0 + (t % 20)) for t in range(0, 150, 10)]
    assert line_events(series("generation_throughput", [steady])) == []
    fails = [(float(t), 0.0) for t in range(0, 60, 10)] + [(float(t), 1.0) for t in range(60, 100, 10)]
    assert [e.at for e in line_events(series("transfer_failures", [fails]))] == [60.0]


def test_step_and_rate_window() -> None:
    assert step_for(7200) == 24 and step_for(600) == 2 and step_for(10) == 1
    assert rate_window_for(24) == 120 and rate_window_for(60) == 240


@pytest.mark.parametrize("text,seconds", [("2h", 7200), ("90m", 5400), ("1h30m", 5400),
                                          ("45s", 45), ("10", 10), ("1.5m", 90)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2x", "h", "-5", "0", "5m 3"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_duration(text)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_prometheus_down_is_recorded_per_series_and_the_bundle_stays_valid(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, "lab", Redactor(), time.time())
    url = f"http://127.0.0.1:{_closed_port()}"
    h = collect_history(writer, url, 600, time.time(), series=SERIES[:3])
    assert [s.error is not None and "cannot reach" in s.error for s in h.series] == [True] * 3
    bundle = writer.finalise({"status": "complete", "hosts": []})
    assert verify_bundle(bundle) == []
    rows = [r for r in load_bundle(bundle).results if r.host == "prometheus"]
    assert [r.key for r in rows] == ["history.running_reqs", "history.queue_reqs",
                                     "history.prefill_bootstrap_queue"]
    assert all(r.error and r.url and r.url.startswith(url + "/api/v1/query_range?") for r in rows)
    back = load_history(bundle)
    assert back is not None and back.prometheus == url
    # written through the redacting writer: the series ids survive it
    assert [s.key for s in back.series] == [s.key for s in SERIES[:3]]
    assert "<redacted" not in (bundle / HISTORY_FILE).read_text()


def test_history_file_round_trip(tmp_path: Path) -> None:
    from pdforensics.prometheus.history import History, HistoryEvent

    h = History("http://p:9090", 0.0, 600.0, 2.0, 120.0,
                (series("decode_transfer_queue", [[(0, 0), (10, 1), (20, 14), (30, 14)]]),),
                (HistoryEvent("decode_transfer_queue", "h:0", 20.0, "x"),))
    doc = json.loads(json.dumps(history_json(h)))
    assert history_from_json(doc) == h
    assert history_from_json({"format": 99}) is None
    (tmp_path / HISTORY_FILE).parent.mkdir(parents=True)
    (tmp_path / HISTORY_FILE).write_text("{not json")
    assert load_history(tmp_path) is None


def test_every_series_query_is_valid_promql() -> None:
    import shutil
    import subprocess

    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is missing: run scripts/setup.sh --test (Debian package prometheus)")
    groups = {"groups": [{"name": "q", "rules": [{"record": f"pdfx:{s.key}", "expr": s.query(120)}
                                                 for s in SERIES]}]}
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as fh:
        json.dump(groups, fh)  # JSON is YAML
    res = subprocess.run([promtool, "check", "rules", fh.name], capture_output=True, text=True)
    Path(fh.name).unlink()
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{len(SERIES)} rules found" in res.stdout
