"""Host times on the capture machine's clock: a host's measured offset is taken off the times it
wrote (log signatures, unit timestamps, Xids, harvested log stacks) on the timeline, in the
report and in the rules' evidence; our own times (samples) are left alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.parsers.journal import scan_log_signatures
from pdforensics.parsers.systemd import parse_systemctl_show
from pdforensics.report.common import utc
from pdforensics.report.page import render
from pdforensics.report.timeline import build_timeline
from pdforensics.views.hostclock import clock_note, on_capture_clock, to_capture_clock
from pdforensics.views.loaded import LoadedCapture, load_capture
from tests.support.builder import BundleBuilder
from tests.support.bundles import T0

GEN = "sglang:generation_tokens_total"
SKEW = 90.0
LOG = "[2027-01-15 07:59:30 TP1] Decode transfer failed for request x\n"


@pytest.fixture
def builder(tmp_path: Path) -> BundleBuilder:
    return BundleBuilder(tmp_path)


def _capture(builder: Any, offsets: dict[str, float]) -> LoadedCapture:
    for i, (host, off) in enumerate(offsets.items()):
        builder.add(host=host, role="decode", port=10 + i, log=LOG,
                    samples=[{GEN: 1000 + 500 * j, "sglang:num_running_reqs": 1} for j in range(3)])
        # the clock result starts at T0 and lasts 0.1 s: the midpoint of its round trip is T0 + 0.05
        builder.host_outputs[(host, "clock")] = (f"{T0 + 0.05 + off:.6f}\n", "txt")
    return load_capture(builder.write())


def test_to_capture_clock() -> None:
    assert to_capture_clock(1000.0, 90.0) == 1000.0 - 90.0
    assert to_capture_clock(1000.0, -2.5) == 1002.5
    assert to_capture_clock(None, 90.0) is None
    assert to_capture_clock(1000.0, None) == 1000.0


def test_log_times_move_by_the_offset_and_samples_do_not(builder: Any) -> None:
    cap = _capture(builder, {"ok": 0.0, "skewed": SKEW})
    (written,) = [h for h in scan_log_signatures(LOG) if h.key == "DECODE_TRANSFER_FAILED"]
    assert written.first_epoch is not None
    got = {s.host: s for s in cap.services()}
    ok_hit = next(h for h in got["ok"].log_hits if h.key == written.key)
    skewed_hit = next(h for h in got["skewed"].log_hits if h.key == written.key)
    assert ok_hit.first_epoch == pytest.approx(written.first_epoch, abs=1e-3)
    assert skewed_hit.first_epoch == pytest.approx(written.first_epoch - SKEW, abs=1e-3)
    assert skewed_hit.last_epoch == pytest.approx(written.first_epoch - SKEW, abs=1e-3)
    # a /metrics sample's time is ours: not moved
    assert got["skewed"].metrics[0].taken_at == got["ok"].metrics[0].taken_at == T0


def test_timeline_and_report_show_corrected_times(builder: Any) -> None:
    cap = _capture(builder, {"ok": 0.0, "skewed": SKEW})
    (written,) = [h for h in scan_log_signatures(LOG) if h.key == "DECODE_TRANSFER_FAILED"]
    assert written.first_epoch is not None
    view, _missing = build_timeline(cap)
    assert view is not None
    firsts = {r.server.split()[0]: r.first for r in view.signatures if r.key == written.key}
    assert firsts == {"ok": utc(written.first_epoch), "skewed": utc(written.first_epoch - SKEW)}
    lanes = [w for w, lane, _tip in view.marks if lane.startswith(written.key)]
    assert sorted(lanes) == sorted([utc(written.first_epoch), utc(written.first_epoch - SKEW)])
    assert "skewed +90.000 s (ahead)" in view.clock and "ok +0.000 s (in step)" in view.clock
    html = render(cap, analyze(cap))
    assert "skewed +90.000 s (ahead)" in html
    assert utc(written.first_epoch - SKEW) in html


def test_rule_evidence_quotes_corrected_times(builder: Any) -> None:
    cap = _capture(builder, {"skewed": SKEW})
    (written,) = [h for h in scan_log_signatures(LOG) if h.key == "DECODE_TRANSFER_FAILED"]
    assert written.first_epoch is not None
    a = analyze(cap)
    (logf,) = [f for f in a.findings if f.key == "LOG_SIGNATURE"]
    text = " ".join(str(e) for e in logf.evidence)
    shown = utc(written.first_epoch - SKEW).removesuffix(" UTC")
    assert shown[11:] in text, text  # HH:MM:SS of the corrected time
    (skew,) = [f for f in a.findings if f.key == "CLOCK_SKEW"]
    assert "+90.000 s" in str(skew.evidence[0]) and "100 ms round trip" in str(skew.evidence[0])


def test_unit_timestamps_move_too(builder: Any) -> None:
    cap = _capture(builder, {"skewed": 0.0})
    host = cap.hosts[0]
    unit = parse_systemctl_show("Id=sglang-decode.service\n"
                                "ActiveEnterTimestamp=Fri 2027-01-15 07:00:00 UTC\n"
                                "ExecMainStartTimestamp=Fri 2027-01-15 07:00:00 UTC\n")
    assert unit.active_enter is not None and unit.active_enter.epoch is not None
    svc = replace(host.services[0], systemd=unit)
    moved = on_capture_clock(replace(host, services=(svc,), clock_offset_s=SKEW))
    got = moved.services[0].systemd
    assert got is not None and got.active_enter is not None and got.exec_main_start is not None
    assert got.active_enter.epoch == unit.active_enter.epoch - SKEW
    assert got.active_enter.raw == unit.active_enter.raw  # the host's own words are kept
    assert got.exec_main_start.epoch == unit.active_enter.epoch - SKEW
    assert "not read" in clock_note((replace(host, clock_offset_s=None),))
