"""The `report` command."""

from __future__ import annotations

import click

from pdforensics.cli.errors import handles_errors


@click.command("report")
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="Output file [BUNDLE/report.html].")
@click.option("--baseline", type=click.Path(exists=True, file_okay=False),
              help="An earlier bundle (when it last worked) to show what changed since "
                   "[the store's baseline, when a store is configured].")
@handles_errors
def report(bundle: str, out: str | None, baseline: str | None) -> None:
    """Render BUNDLE's incident report: one self-contained HTML file (no host contact).

    The verdict is re-derived from the bundle's files. Links to raw evidence are relative,
    so keep the report next to (or inside) its bundle.
    """
    from pdforensics.app.bundles import render_report

    click.echo(str(render_report(bundle, out, baseline)))
