"""Request tracking over real sshd: the lab's servers log requests (--log-requests-level 1) and
their PD timeouts are 2 s, so a fault's requests outlive them within a short capture. Each
request rule fires on its own fault, with the right top finding, and on no other fault."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis
from pdforensics.analysis.requests_track import RequestTrack, track_requests
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.config.cluster import load_cluster_file
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from pdforensics.views.loaded import load_capture
from tests.support import ports
from tests.support.rule_matrix import RuleMatrix

BASE_PORT = ports.block()
TIMEOUTS = {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "2",
            "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "2"}
LOG_REQUESTS = ["--log-requests", "--log-requests-level", "1"]
REQUEST_RULES = ("FORGOTTEN_REQUESTS", "STRANDED_BOOTSTRAP", "PREALLOC_LEAK")
# issue #16's matrix: the new rules each fault fires (every other new rule stays silent) and
# its top finding; transfer-stuck is the seed case, its forgotten requests below the frozen hop
EXPECTED: dict[str, tuple[set[str], str | None]] = {
    "healthy": (set(), None),
    "forgotten-requests": ({"FORGOTTEN_REQUESTS"}, "REQUESTS_FROZEN"),
    "stranded-bootstrap": ({"STRANDED_BOOTSTRAP"}, "STRANDED_BOOTSTRAP"),
    "prealloc-leak": ({"PREALLOC_LEAK"}, "PREALLOC_LEAK"),
    "transfer-stuck": ({"FORGOTTEN_REQUESTS"}, "DECODE_TRANSFER_STUCK"),
}
MATRIX = RuleMatrix("request-logging lab")

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(not shutil.which("ssh") or not Path("/usr/sbin/sshd").exists(),
                                 reason="needs openssh-server")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("sshrequests")
    try:
        info = lab_up(d / "lab", fault="healthy", ssh=True, base_port=BASE_PORT,
                      extra_args={"prefill": LOG_REQUESTS, "decode": LOG_REQUESTS},
                      extra_env={"prefill": TIMEOUTS, "decode": TIMEOUTS})
        yield info, d
    finally:
        lab_down(d / "lab")
        MATRIX.write()


def capture(lab: tuple[LabInfo, Path], fault: str) -> tuple[Analysis, RequestTrack]:
    info, d = lab
    set_fault(info.dir, "healthy")
    time.sleep(1.0)
    set_fault(info.dir, fault)
    time.sleep(3.5)  # the fault's requests outlive the 2 s timeouts
    opts = CaptureOptions(out_dir=d / fault, deadline_s=30,
                          plan=PlanOptions(samples=2, interval_s=1.5, stack_dumps=1))
    outcome = run_capture(load_cluster_file(info.cluster_file), opts)
    cap = load_capture(outcome.bundle)
    a = analyze(cap)
    MATRIX.check(a, fault, *EXPECTED[fault])
    return a, track_requests(cap)


def fired(a: Analysis) -> set[str]:
    return {f.key for f in a.findings} & set(REQUEST_RULES)


def test_healthy_requests_all_finish(lab: tuple[LabInfo, Path]) -> None:
    a, track = capture(lab, "healthy")
    assert not fired(a), [f.key for f in a.findings]
    assert track.requests and not track.open
    assert dict(track.funnel)["finished"] >= 2
    assert not track.silent


@pytest.mark.parametrize(("fault", "rule", "top", "stage", "count"), [
    # decode's gauges read 0 while it holds them (as the real 0.5.23 shows): the log's last word,
    # "received", places them at decode prealloc
    ("forgotten-requests", "FORGOTTEN_REQUESTS", "REQUESTS_FROZEN", "decode_prealloc", 23),
    ("stranded-bootstrap", "STRANDED_BOOTSTRAP", "STRANDED_BOOTSTRAP", None, 0),
    ("prealloc-leak", "PREALLOC_LEAK", "PREALLOC_LEAK", "decode_prealloc", 9),
])
def test_request_rule_fires_on_its_fault_only(lab: tuple[LabInfo, Path], fault: str, rule: str,
                                              top: str, stage: str | None, count: int) -> None:
    a, track = capture(lab, fault)
    assert fired(a) == {rule}, [f.key for f in a.findings]
    assert a.findings[0].key == top, [f.key for f in a.findings]
    mine = next(f for f in a.findings if f.key == rule)
    text = " | ".join(str(e) for e in mine.evidence)
    assert track.requests[0].name in text or any(r.name in text for r in track.requests)
    assert ".log:" in text or "log_file" in text  # file:line of the log lines
    assert "/metrics" in text  # and the queue gauges behind it
    assert mine.next_step
    if stage is not None:
        assert len(track.open) == count
        assert {r.stage for r in track.open} == {stage}


def test_transfer_stuck_shows_forgotten_requests_below_the_frozen_hop(
        lab: tuple[LabInfo, Path]) -> None:
    a, track = capture(lab, "transfer-stuck")
    assert a.findings[0].key == "DECODE_TRANSFER_STUCK", [f.key for f in a.findings]
    assert "FORGOTTEN_REQUESTS" in [f.key for f in a.findings]
    assert fired(a) == {"FORGOTTEN_REQUESTS"}
    assert len(track.open) == 14 and {r.stage for r in track.open} == {"decode_transfer"}
    assert all((r.age_s or 0) > 2.0 for r in track.open)
