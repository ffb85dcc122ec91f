"""Start a lab at a base port from the shared allocator, stepping past ports in use (a port can
be briefly taken by some other program between the check and the bind; a fresh block is tried then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdforensics.errors import PdforensicsError
from pdforensics.lab import lab_up
from pdforensics.lab.core import LabInfo
from tests.support import ports


def lab_up_in(lab_dir: Path, first: int, tries: int = 8, **kw: Any) -> LabInfo:
    """lab_up at base port first, then at fresh blocks from the allocator (at most `tries`)."""
    for n in range(tries):
        base = first if n == 0 else ports.block()
        try:
            return lab_up(lab_dir, base_port=base, **kw)
        except PdforensicsError as exc:
            if "in use" not in str(exc) or n == tries - 1:
                raise
    raise AssertionError("unreachable")


def lab_up_at(lab_dir: Path, base: int, wait_s: float = 20.0, **kw: Any) -> LabInfo:
    """lab_up at exactly this base port (a scenario keeps its ports), waiting out a port
    that some short-lived client socket holds."""
    import time

    end = time.monotonic() + wait_s
    while True:
        try:
            return lab_up(lab_dir, base_port=base, **kw)
        except PdforensicsError as exc:
            if "in use" not in str(exc) or time.monotonic() > end:
                raise
            time.sleep(1.0)
