"""SAFEGUARDS_DISABLED on a real lab started with the launch-time fault `safeguards-off`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.config.cluster import load_cluster_file
from pdforensics.errors import PdforensicsError
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from pdforensics.views.loaded import load_capture
from tests.support import ports
from tests.support.rule_matrix import RuleMatrix

pytestmark = pytest.mark.lab

BASE_PORT = ports.block()
MATRIX = RuleMatrix("launch-time lab (local)")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("lab-safeguards")
    try:
        yield lab_up(d / "lab", fault="safeguards-off", base_port=BASE_PORT), d
    finally:
        lab_down(d / "lab")
        MATRIX.write()


def capture(lab: tuple[LabInfo, Path]) -> Analysis:
    info, d = lab
    opts = CaptureOptions(out_dir=d / "capture", deadline_s=20,
                          plan=PlanOptions(samples=1, interval_s=1.0, stack_dumps=1))
    outcome = run_capture(load_cluster_file(info.cluster_file), opts)
    return analyze(load_capture(outcome.bundle))


def test_safeguards_off_fires_on_both_roles(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab)
    MATRIX.check(a, "safeguards-off", {"SAFEGUARDS_DISABLED"}, "SAFEGUARDS_DISABLED")
    found = [f for f in a.findings if f.key == "SAFEGUARDS_DISABLED"]
    assert {f.subject.split()[-1].split(":")[0] for f in found if f.subject} == {"prefill", "decode"}
    text = "\n".join(str(e) for f in found for e in f.evidence)
    assert "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=100000" in text
    assert "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=100000" in text
    assert "--watchdog-timeout=100000" in text
    # the lab's stand-in reports sglang 0.5.23: its defaults are cited
    assert "default of sglang 0.5.23: 300" in text
    assert all("--watchdog-timeout 300" in f.next_step for f in found)
    assert a.verdict == "DEGRADED" and a.findings[0].key == "SAFEGUARDS_DISABLED", \
        [(f.key, f.severity) for f in a.findings]


def test_safeguards_off_cannot_be_switched_on_at_run_time(tmp_path: Path,
                                                          lab: tuple[LabInfo, Path]) -> None:
    info, _d = lab
    set_fault(info.dir, "healthy")  # a launch-time fault's lab may switch to others
    set_fault(info.dir, "safeguards-off")  # and back
    fake = tmp_path / "lab"
    fake.mkdir()
    (fake / "lab.json").write_text('{"fault": "healthy"}')
    with pytest.raises(PdforensicsError, match="lab up --fault safeguards-off"):
        set_fault(fake, "safeguards-off")
