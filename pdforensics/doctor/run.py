"""Run doctor: a light capture with the probes, then every check over its bundle."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pdforensics.capture.host_run import Progress
from pdforensics.capture.profiles import PROFILES
from pdforensics.capture.run import run_capture
from pdforensics.doctor.checks_access import access_checks, room_checks
from pdforensics.doctor.checks_consistency import consistency_checks
from pdforensics.doctor.checks_gpu import gpu_checks
from pdforensics.doctor.checks_server import server_checks
from pdforensics.doctor.checks_stacks import stack_checks
from pdforensics.doctor.inputs import DoctorInput, read_probes
from pdforensics.doctor.model import DoctorReport, ordered
from pdforensics.doctor.probes import PROBE_NAMES
from pdforensics.doctor.safeguards_check import safeguard_checks
from pdforensics.doctor.stored import write_doctor
from pdforensics.model import ClusterSpec
from pdforensics.views.loaded import load_capture


@dataclass(frozen=True)
class DoctorOptions:
    """A doctor run: the doctor profile's capture (capture/profiles.py) and where it goes."""

    deadline_s: float = 45.0
    out_dir: Path | None = None  # keep the bundle there; None: a temporary one, removed
    accept_new_host_keys: bool = False
    evidence_dirs: tuple[Path, ...] = ()  # where bundles and the store go (disk room)


def run_doctor(cluster: ClusterSpec, options: DoctorOptions,
               progress: Progress | None = None) -> DoctorReport:
    """Capture lightly (the capture's transport, discovery and planner), then check."""
    t0 = time.monotonic()
    temp = None if options.out_dir is not None else Path(tempfile.mkdtemp(prefix="pdforensics-doctor-"))
    out = options.out_dir or temp
    assert out is not None
    try:
        doctor = PROFILES["doctor"]
        capture = doctor.options(out, doctor.collect(deadline_s=options.deadline_s),
                                 accept_new_host_keys=options.accept_new_host_keys)
        outcome = run_capture(cluster, capture, progress=progress)
        report = evaluate(outcome.bundle, cluster, options.evidence_dirs)
        report = DoctorReport(report.cluster, report.checks,
                              None if temp else str(outcome.bundle), time.monotonic() - t0)
        if temp is None:
            write_doctor(outcome.bundle, report)
        return report
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def evaluate(bundle: Path, cluster: ClusterSpec, evidence_dirs: tuple[Path, ...] = ()) -> DoctorReport:
    """Every check over a bundle captured with the doctor probes."""
    loaded = load_capture(bundle)
    d = DoctorInput(loaded, cluster, read_probes(loaded, PROBE_NAMES), evidence_dirs)
    checks = [*room_checks(evidence_dirs), *access_checks(d), *stack_checks(d), *gpu_checks(d),
              *server_checks(d), *safeguard_checks(d), *consistency_checks(d)]
    return DoctorReport(cluster.name, ordered(checks), str(bundle))
