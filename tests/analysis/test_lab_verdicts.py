"""Verdicts on real lab captures (local transport): one lab, faults switched in turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis
from pdforensics.capture import CaptureOptions, run_capture
from pdforensics.config import load_cluster_file
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from pdforensics.loaded import load_capture
from pdforensics.planner import PlanOptions
from tests.support import ports

BASE_PORT = ports.block()  # found free at run time


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("lab")
    try:
        info = lab_up(d / "lab", fault="healthy", ssh=False, base_port=BASE_PORT)
        yield info, d
    finally:
        lab_down(d / "lab")


def capture(lab: tuple[LabInfo, Path], fault: str, samples: int = 3) -> Analysis:
    info, d = lab
    set_fault(info.dir, "healthy")  # reset queues a previous fault froze
    time.sleep(1.0)
    set_fault(info.dir, fault)
    time.sleep(2.5)
    out = d / f"{fault}-{samples}"
    opts = CaptureOptions(out_dir=out, deadline_s=30,
                          plan=PlanOptions(samples=samples, interval_s=2.0, stack_dumps=3))
    outcome = run_capture(load_cluster_file(info.cluster_file), opts)
    a = analyze(load_capture(outcome.bundle))
    # the lab's servers keep sglang's 300 s timeouts: only `safeguards-off` (its own lab) fires it
    assert "SAFEGUARDS_DISABLED" not in keys(a), fault
    return a


def keys(a: Analysis, severity: str | None = None) -> list[str]:
    return [f.key for f in a.findings if severity is None or f.severity == severity]


# Order matters: process-dead is not reversible, so it runs last.

def test_healthy(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "healthy")
    assert a.verdict == "HEALTHY", a.summary
    assert not keys(a, "critical")


def test_kv_full_is_pressure_not_wedge(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "kv-full")
    assert "KV_CACHE_PRESSURE" in keys(a, "warning")
    assert a.verdict != "WEDGED", a.summary
    assert a.verdict == "DEGRADED"


def test_forgotten_requests(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "forgotten-requests")
    assert a.verdict == "WEDGED"
    frozen = [f for f in a.findings if f.key == "REQUESTS_FROZEN"]
    assert frozen and any("decode" in f.title for f in frozen)
    assert any("scheduler loop still turns" in str(e) for f in frozen for e in f.evidence)


def test_transfer_stuck(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "transfer-stuck")
    assert a.verdict == "WEDGED"
    first = a.findings[0]
    assert first.key == "DECODE_TRANSFER_STUCK", keys(a)
    assert "14 → 14 → 14" in " ".join(str(e) for e in first.evidence)
    assert "KV_TRANSFER_FAILURES" in keys(a, "warning")  # the counter rises in this fault


def test_single_scrape_of_a_wedge_is_not_wedged(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "transfer-stuck", samples=1)
    assert a.verdict in ("DEGRADED", "UNKNOWN"), a.summary
    assert any(s.rule == "REQUESTS_FROZEN" for s in a.skipped)
    assert any("second /metrics sample" in m for m in a.missing)


def test_hung_endpoint(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "hung-endpoint")
    hang = [f for f in a.findings if f.key == "SCHEDULER_ENDPOINT_HANG"]
    assert hang and all(f.severity == "critical" for f in hang)
    assert {f.title.split()[0] for f in hang} == {"prefill-0", "decode-0"}
    assert a.verdict == "WEDGED"


def test_rank_stuck(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "rank-stuck")
    outliers = [f for f in a.findings if f.key == "RANK_OUTLIER"]
    assert len(outliers) == 1, keys(a)
    assert "decode" in outliers[0].title and "rank TP1" in outliers[0].title
    assert "ALL_RANKS_STUCK" not in keys(a)
    # the rank in a collective explains the frozen queues: it sorts before them
    assert keys(a).index("RANK_OUTLIER") < keys(a).index("REQUESTS_FROZEN")
    assert a.verdict == "WEDGED"


def test_process_dead(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "process-dead")
    assert a.findings[0].key == "PROCESS_STATE", keys(a)
    assert "1 of 2 scheduler ranks" in a.findings[0].title
    assert a.verdict == "WEDGED"
