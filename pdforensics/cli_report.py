"""The `report` command."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _handles_errors(fn: F) -> F:
    """cli.handles_errors, looked up when the command runs (cli imports this module)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from pdforensics.cli import handles_errors

        return handles_errors(fn)(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@click.command("report")
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="Output file [BUNDLE/report.html].")
@click.option("--baseline", type=click.Path(exists=True, file_okay=False),
              help="An earlier bundle (when it last worked) to show what changed since "
                   "[the store's baseline, when a store is configured].")
@_handles_errors
def report(bundle: str, out: str | None, baseline: str | None) -> None:
    """Render BUNDLE's incident report: one self-contained HTML file (no host contact).

    The verdict is re-derived from the bundle's files. Links to raw evidence are relative,
    so keep the report next to (or inside) its bundle.
    """
    from pdforensics.report import write_report
    from pdforensics.report.baseline import changes_since

    since = changes_since(Path(bundle), Path(baseline) if baseline else None)
    click.echo(str(write_report(bundle, out, changes=since.changes, baseline=since.baseline,
                                change_notes=since.notes)))
