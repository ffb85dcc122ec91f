"""doctor's checks kept with a bundle (doctor.json, a derived file like analysis.json), and
how they moved between two bundles (what `diff` shows as readiness changes)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pdforensics.doctor.model import Check, DoctorReport, Status, worse
from pdforensics.errors import PdforensicsError

#: the derived file (like analysis.json) that keeps a bundle's doctor checks
DOCTOR_FILE = "doctor.json"


def write_doctor(bundle: Path, report: DoctorReport) -> Path:
    """Keep the checks beside the bundle's analysis (a derived file, not hashed)."""
    path = bundle / DOCTOR_FILE
    tmp = path.with_name(f".{DOCTOR_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_json(), indent=1))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def read_doctor(bundle: Path) -> DoctorReport | None:
    """The doctor checks stored with a bundle (a snapshot taken with --doctor), else None."""
    from pdforensics.untrusted.read import read_optional

    try:
        data = read_optional(Path(bundle), DOCTOR_FILE, DOCTOR_FILE)
        doc = json.loads(data) if data else None
    except (OSError, ValueError, PdforensicsError):
        return None
    return DoctorReport.from_json(doc) if isinstance(doc, dict) else None


@dataclass(frozen=True)
class Move:
    """One check whose status changed from bundle A to B (before None: new in B)."""

    check: Check  # as in B
    before: Status | None

    @property
    def worse(self) -> bool:
        return self.before is None or worse(self.before, self.check.status)


def readiness_moves(a: Path, b: Path) -> list[Move]:
    """Checks whose status moved between A and B (both with doctor.json); a check new in B
    only when it fails. Empty when either bundle has no doctor checks."""
    ra, rb = read_doctor(a), read_doctor(b)
    if ra is None or rb is None:
        return []
    before = {(c.host, c.key, c.subject): c.status for c in ra.checks}
    out = []
    for c in rb.checks:
        old = before.get((c.host, c.key, c.subject))
        if (old is None and c.status != "fail") or old == c.status:
            continue
        out.append(Move(c, old))
    return out
