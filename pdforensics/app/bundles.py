"""Reading a bundle someone captured: `analyze` (the verdict, and the requests its logs show
when asked) and `report` (the HTML page, with what changed since the baseline)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
                   with_requests: bool = False, since: Any = None) -> Analyzed:
    """Analyze a finished bundle directory (a killed capture's directory is refused with its
    fix); ``since`` (--since) sets the evidence window's start."""
    from pdforensics.analysis.engine import analyze
    from pdforensics.capture.recover import refuse_unfinished
    from pdforensics.views.loaded import load_capture

    refuse_unfinished(bundle)
    capture = load_capture(bundle, since=since)
    result = analyze(capture, [Path(c) for c in client_dumps])
    requests = None
    if with_requests:
        from pdforensics.analysis.requests_track import track_requests

        requests = track_requests(capture)
    return Analyzed(capture, result, requests)


def render_report(bundle: str | Path, out: str | None = None, baseline: str | None = None,
                  since: Any = None) -> Path:
    """Write the bundle's report (default BUNDLE/report.html; for an archive, NAME.report.html
    beside it, linking to the directory `tar xzf` makes there), with the changes since
    ``baseline`` (else the store's baseline when a store is configured)."""
    from pdforensics.capture.recover import refuse_unfinished
    from pdforensics.report import write_report
    from pdforensics.report.baseline import changes_since
    from pdforensics.untrusted.archive import SUFFIXES, is_archive, opened_bundle

    archive = Path(bundle) if is_archive(bundle) else None
    with opened_bundle(bundle) as path:
        refuse_unfinished(path)
        base = changes_since(path, Path(baseline) if baseline else None)
        link_base = None
        if archive is not None:
            link_base = archive.parent / path.name
            if out is None:
                stem = next(archive.name[: -len(x)] for x in SUFFIXES if archive.name.endswith(x))
                out = str(archive.parent / f"{stem}.report.html")
        return write_report(path, out, changes=base.changes, baseline=base.baseline,
                            change_notes=base.notes, since=since, link_base=link_base)
