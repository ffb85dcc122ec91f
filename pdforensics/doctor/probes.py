"""Reading doctor's probes: the JSON line each prints (the probes themselves, the commands,
are declared in collectors/doctor.py with the other sources)."""

from __future__ import annotations

import json
from typing import Any

from pdforensics.collectors.doctor import DOCTOR_ATTACH, DOCTOR_GPU, DOCTOR_HOST, PROBE_NAMES, PROBES

__all__ = ["DOCTOR_ATTACH", "DOCTOR_GPU", "DOCTOR_HOST", "PROBES", "PROBE_NAMES", "probe_json"]


def probe_json(result_text: str) -> dict[str, Any] | None:
    """The probe's JSON line (the last line that parses), None when there is none."""
    for line in reversed(result_text.strip().splitlines()):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            return doc
    return None
