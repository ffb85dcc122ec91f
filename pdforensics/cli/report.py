"""The `report` command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import since_option

F = TypeVar("F", bound=Callable[..., Any])




@click.command("report")
@click.argument("bundle", type=click.Path(exists=True))
@click.option("-o", "--out", type=click.Path(dir_okay=False),
              help="Output file [BUNDLE/report.html; for BUNDLE.tar.gz, BUNDLE.report.html beside it].")
@click.option("--baseline", type=click.Path(exists=True, file_okay=False),
              help="An earlier bundle (when it last worked) to show what changed since "
                   "[the store's baseline, when a store is configured].")
@since_option
@handles_errors
def report(bundle: str, out: str | None, baseline: str | None, since: Any) -> None:
    """Render BUNDLE's incident report: one self-contained HTML file (no host contact).
    BUNDLE is a bundle directory or its .tar.gz.

    The verdict is re-derived from the bundle's files. Links to raw evidence are relative,
    so keep the report next to (or inside) its bundle; a report of an archive links to the
    bundle's directory beside the archive, where `tar xzf` puts it.
    """
    from pdforensics.capture.recover import refuse_unfinished
    from pdforensics.report import write_report
    from pdforensics.report.baseline import changes_since
    from pdforensics.untrusted.archive import SUFFIXES, is_archive, opened_bundle

    archive = Path(bundle) if is_archive(bundle) else None
    if archive is None:
        refuse_unfinished(bundle)
    with opened_bundle(bundle) as path:
        base = changes_since(path, Path(baseline) if baseline else None)
        link_base = None
        if archive is not None:
            link_base = archive.parent / path.name
            if out is None:
                stem = next(archive.name[: -len(x)] for x in SUFFIXES if archive.name.endswith(x))
                out = str(archive.parent / f"{stem}.report.html")
        click.echo(str(write_report(path, out, changes=base.changes, baseline=base.baseline,
                                    change_notes=base.notes, since=since, link_base=link_base)))
