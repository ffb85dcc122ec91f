"""One pipeline after every capture: analyze -> report -> permissions -> store filing.

`capture`, `snapshot` and `watch` finish their bundles here, so each bundle gets the same
analysis.json, report.html, private permissions and store entry. A failing step is one
warning line, never a lost bundle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pdforensics.analysis.engine import analyze_path
from pdforensics.analysis.findings import Analysis
from pdforensics.bundle.archive import write_archive
from pdforensics.bundle.ondisk import make_private
from pdforensics.errors import BundleError
from pdforensics.report.baseline import changes_since
from pdforensics.report.write import write_report
from pdforensics.store.filing import Filing, file_into, file_safely
from pdforensics.store.index import Index
from pdforensics.views.loaded import LoadedCapture, load_capture


@dataclass(frozen=True)
class Finished:
    """A finished bundle: its analysis, report and store entry (None where a step failed)."""

    bundle: Path
    analysis: Analysis | None
    report: Path | None
    filing: Filing | None
    warnings: tuple[str, ...] = ()
    capture: LoadedCapture | None = None  # what the analysis and the report both read
    archive: Path | None = None  # BUNDLE.tar.gz, the one file to attach (when asked for)


def finish_bundle(bundle: Path, *, store: Path | None = None, index: Index | None = None,
                  origin: str = "capture", client_dumps: Sequence[Path] = (),
                  archive: bool = False) -> Finished:
    """Analyze BUNDLE, write its report, make it private, pack BUNDLE.tar.gz beside it (with
    ``archive``), file it into the store (an open ``index`` for a snapshot holding the store's
    lock, else ``store`` when one is set)."""
    warnings: list[str] = []
    loaded = load_capture(bundle)  # read once for both the analysis and the report
    analysis: Analysis | None = None
    try:
        analysis = analyze_path(bundle, client_dumps, capture=loaded)
    except Exception as exc:  # a rules bug must not cost the bundle
        warnings.append(f"analysis failed ({type(exc).__name__}: {exc}); "
                        f"run `pdforensics analyze {bundle}` again")
    report: Path | None = None
    try:
        since = changes_since(bundle)
        report = write_report(bundle, analysis=analysis, changes=since.changes,
                              baseline=since.baseline, change_notes=since.notes, capture=loaded)
    except Exception as exc:  # the bundle is already final: keep it and the exit code
        warnings.append(f"report not written ({type(exc).__name__}: {exc}); "
                        f"render it later with `pdforensics report {bundle}`")
    make_private(bundle)
    packed: Path | None = None
    if archive:
        try:
            packed = write_archive(bundle)
        except BundleError as exc:  # the bundle itself is complete: keep it and say so
            warnings.append(f"archive not written: {exc}")
    filing = None
    if index is not None:
        filing = Filing(index.store, file_into(index, bundle, origin)[0])
    elif store is not None:
        filing = file_safely(store, bundle, origin)
    if filing is not None and filing.error:
        warnings.append(f"not filed into the store {filing.store}: {filing.error}")
    return Finished(bundle, analysis, report, filing, tuple(warnings), loaded, packed)
