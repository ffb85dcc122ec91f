"""The lab without process titles (issue #14): SGLang's ranks keep their python command lines
when setproctitle is missing; discovery finds them as the server's spawned children and the
verdicts are the same as with titles."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.config.cluster import load_cluster_file
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from pdforensics.views.loaded import load_capture
from tests.support import ports

pytestmark = pytest.mark.lab

BASE_PORT = ports.block()  # found free at run time


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("untitled")
    try:
        yield lab_up(d / "lab", fault="healthy", base_port=BASE_PORT, titles=False), d
    finally:
        lab_down(d / "lab")


def capture(lab: tuple[LabInfo, Path], fault: str) -> Analysis:
    info, d = lab
    set_fault(info.dir, "healthy")
    time.sleep(1.0)
    set_fault(info.dir, fault)
    time.sleep(2.5)
    opts = CaptureOptions(out_dir=d / fault, deadline_s=40, plan=PlanOptions())
    cap = load_capture(run_capture(load_cluster_file(info.cluster_file), opts).bundle)
    for svc in cap.services():  # no title anywhere, yet every rank is found and dumped
        if svc.kind == "server":
            assert not any("sglang::" in p.info.args for p in svc.processes)
            assert sorted(p.info.rank or "" for p in svc.ranks) == ["TP0", "TP1"] or \
                fault == "process-dead"
            assert all(p.stacks for p in svc.ranks)
    return analyze(cap)


def keys(a: Analysis, severity: str | None = None) -> list[str]:
    return [f.key for f in a.findings if severity is None or f.severity == severity]


def test_healthy(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "healthy")
    assert a.verdict == "HEALTHY", (a.summary, keys(a))


def test_busy(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "busy")
    assert a.verdict in ("HEALTHY", "DEGRADED") and not keys(a, "critical"), a.summary


def test_rank_stuck(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "rank-stuck")
    assert a.verdict == "WEDGED" and a.findings[0].key == "RANK_OUTLIER", keys(a)
    assert "rank TP1" in a.findings[0].title and a.findings[0].severity == "critical"


def test_process_dead(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "process-dead")
    assert a.verdict == "WEDGED" and a.findings[0].key == "PROCESS_STATE", keys(a)
    assert "1 of 2 scheduler ranks" in a.findings[0].title
