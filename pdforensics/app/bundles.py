"""Reading a bundle someone captured: `analyze` (the verdict, and the requests its logs show
when asked) and `report` (the HTML page, with what changed since the baseline)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdforensics.analysis.findings import Analysis
    from pdforensics.analysis.requests_track import RequestTrack
    from pdforensics.views.loaded import LoadedCapture


@dataclass(frozen=True)
class Analyzed:
    """A bundle's analysis, the capture it read, and its request tracking (when asked)."""

    capture: LoadedCapture
    analysis: Analysis
    requests: RequestTrack | None = None


def analyze_bundle(bundle: str | Path, client_dumps: Sequence[str | Path] = (),
                   with_requests: bool = False) -> Analyzed:
    """Analyze a finished bundle (a killed capture's directory is refused with its fix)."""
    from pdforensics.analysis.engine import analyze
    from pdforensics.capture.recover import refuse_unfinished
    from pdforensics.views.loaded import load_capture

    refuse_unfinished(bundle)
    capture = load_capture(bundle)
    result = analyze(capture, [Path(c) for c in client_dumps])
    requests = None
    if with_requests:
        from pdforensics.analysis.requests_track import track_requests

        requests = track_requests(capture)
    return Analyzed(capture, result, requests)


def render_report(bundle: str | Path, out: str | None = None, baseline: str | None = None) -> Path:
    """Write the bundle's report (default BUNDLE/report.html), with the changes since
    ``baseline`` (else the store's baseline when a store is configured)."""
    from pdforensics.capture.recover import refuse_unfinished
    from pdforensics.report import write_report
    from pdforensics.report.baseline import changes_since

    refuse_unfinished(bundle)
    since = changes_since(Path(bundle), Path(baseline) if baseline else None)
    return write_report(bundle, out, changes=since.changes, baseline=since.baseline,
                        change_notes=since.notes)
