"""`doctor`: the targets resolved, the doctor profile's light capture, every check over it."""

from __future__ import annotations

from pathlib import Path

from pdforensics.app.targets import Where, resolve
from pdforensics.capture.profiles import Collect
from pdforensics.doctor.model import DoctorReport


def check_readiness(where: Where, collect: Collect, out_dir: str | None, bundles_dir: str,
                    progress: bool = True) -> DoctorReport:
    """Will the next capture see everything? ``bundles_dir`` (and the cluster's store) are
    checked for free disk; ``out_dir`` keeps the light capture's bundle (else it is removed)."""
    from pdforensics.capture.progress import terminal_progress
    from pdforensics.doctor.run import DoctorOptions, run_doctor

    targets = resolve(where, collect.deadline_s, pods=False)
    cluster = targets.cluster
    dirs = [Path(bundles_dir)] + ([Path(cluster.store)] if cluster.store else [])
    options = DoctorOptions(deadline_s=collect.deadline_s, out_dir=Path(out_dir) if out_dir else None,
                            accept_new_host_keys=targets.accept_new_host_keys,
                            evidence_dirs=tuple(dirs))
    shown = terminal_progress([h.name for h in cluster.hosts], collect.deadline_s, not progress)
    try:
        return run_doctor(cluster, options, progress=shown)
    finally:
        if shown is not None:
            shown.close()
