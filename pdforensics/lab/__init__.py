"""The lab: a rehearsal SGLang PD cluster of local processes (and loopback sshd hosts).

Its core (lab_up and the rest) is imported on first use, so the CLI, which lists the lab's
faults for every command's start, does not pay for it (about 55 ms of imports)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdforensics.lab.faults import FAULTS

if TYPE_CHECKING:
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

__all__ = ["FAULTS", "LabHostInfo", "LabInfo", "LabProcess", "LabStatus", "lab_down", "lab_status",
           "lab_up", "set_fault"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pdforensics.lab import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
