"""The lab: a rehearsal SGLang PD cluster of local processes (and loopback sshd hosts)."""

from __future__ import annotations

from pdforensics.lab.core import (
    LabHostInfo,
    LabInfo,
    LabProcess,
    LabStatus,
    lab_down,
    lab_status,
    lab_up,
    set_fault,
)
from pdforensics.lab.faults import FAULTS

__all__ = [
    "FAULTS",
    "LabHostInfo",
    "LabInfo",
    "LabProcess",
    "LabStatus",
    "lab_down",
    "lab_status",
    "lab_up",
    "set_fault",
]
