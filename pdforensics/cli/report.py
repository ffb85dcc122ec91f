"""The `report` command."""

from __future__ import annotations

from typing import Any

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import since_option


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
    from pdforensics.app.bundles import render_report

    click.echo(str(render_report(bundle, out, baseline, since)))
