"""The diagnosis `triage` gives for one text written to a file (reading tests)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.analysis.pdpath.model import Diagnosis
from pdforensics.triage.run import triage_paths


def diagnose_text(tmp_path: Path, text: str, name: str = "run.log") -> Diagnosis:
    """Write ``text`` to ``tmp_path/name``, triage it, and return its diagnosis."""
    p = tmp_path / name
    p.write_text(text)
    a = triage_paths([str(p)]).analysis
    assert a is not None and a.diagnosis is not None
    return a.diagnosis
