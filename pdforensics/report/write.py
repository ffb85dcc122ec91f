"""Render a bundle's report to a file: analysis from the bundle alone, atomic write."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis
from pdforensics.analysis.result_json import read_analysis
from pdforensics.diff.compare import Change
from pdforensics.errors import BundleError
from pdforensics.report.changes import Baseline
from pdforensics.report.page import render
from pdforensics.views.loaded import LoadedCapture, load_capture
from pdforensics.views.window import Since

REPORT_FILE = "report.html"


def bundle_analysis(capture: LoadedCapture) -> tuple[Analysis | None, str | None]:
    """The analysis of a capture, re-run from its files; analysis.json if the rules fail."""
    try:
        return analyze(capture), None
    except Exception as exc:  # a rules bug must not cost the report
        why = f"the analysis failed ({type(exc).__name__}: {exc})"
    try:
        stored = read_analysis(capture.path)
    except BundleError as exc:
        return None, f"{why}; {exc}"
    return (stored, None) if stored is not None else (None, why)


def raw_prefix(bundle: Path, out: Path) -> str:
    """How a page at ``out`` links to files of ``bundle`` ("" when it sits inside)."""
    rel = os.path.relpath(bundle.resolve(), out.resolve().parent)
    return "" if rel == "." else Path(rel).as_posix() + "/"


def write_report(bundle: str | Path, out: str | Path | None = None,
                 analysis: Analysis | None = None,
                 changes: Sequence[Change] | None = None, baseline: Baseline | None = None,
                 change_notes: Sequence[str] = (), capture: LoadedCapture | None = None,
                 since: Since | None = None, link_base: Path | None = None) -> Path:
    """Render BUNDLE's report to ``out`` (default BUNDLE/report.html); returns the path.
    ``capture``: the bundle already loaded (a capture analyzes and reports one load);
    ``since``: the evidence window's start (report --since); ``link_base``: where the
    bundle's files will be for the raw links (an archive's bundle once unpacked beside it)."""
    if capture is None:
        capture = load_capture(bundle, since=since)
    note = None
    if analysis is None:
        analysis, note = bundle_analysis(capture)
    target = Path(out) if out is not None else capture.path / REPORT_FILE
    html = render(capture, analysis, changes, baseline,
                  raw_prefix(link_base or capture.path, target),
                  analysis_note=note, change_notes=change_notes)
    _write_atomic(target, html)
    return target


def _write_atomic(target: Path, text: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=str(target.parent), prefix=f".{target.name}.",
                                   suffix=".tmp")
    except OSError as exc:
        raise BundleError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)  # like the rest of the bundle: it quotes evidence
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise BundleError(f"cannot write {target}: {exc.strerror or exc}") from None
