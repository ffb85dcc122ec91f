"""The `report` command, and the report step of `capture`."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from pdforensics.diff.compare import Change
    from pdforensics.report import Baseline

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
    from pdforensics.recover import refuse_unfinished
    from pdforensics.report import write_report

    refuse_unfinished(bundle)
    changes, base, notes = _changes(Path(bundle), Path(baseline) if baseline else None)
    click.echo(str(write_report(bundle, out, changes=changes, baseline=base, change_notes=notes)))


def _changes(bundle: Path, baseline: Path | None) -> tuple[list[Change] | None, Baseline | None,
                                                           tuple[str, ...]]:
    """Changes from BASELINE (given) or from the store's baseline (configured) to BUNDLE."""
    from pdforensics.report import Baseline

    if baseline is not None:
        from pdforensics.diff import diff_bundles

        result = diff_bundles(baseline, bundle)
        return list(result.changes), Baseline(baseline.resolve().name, result.a_taken_at or None), \
            result.notes
    try:
        from pdforensics.store import baseline_diff

        found = baseline_diff(bundle)
    except Exception:  # a store problem costs the section, never the report
        return None, None, ()
    if found is None:
        return None, None, ()
    how = "set as the baseline" if found.explicit else "the newest HEALTHY snapshot in the store"
    return (list(found.result.changes), Baseline(f"{found.baseline.name} ({how})",
                                                 found.baseline.taken_at), found.result.notes)


def capture_report(bundle: Path, analysis: dict[str, Any] | None, capture: Any = None) -> str | None:
    """Write BUNDLE/report.html after a capture; a failure is one warning, never lost evidence."""
    try:
        from pdforensics.report import write_report

        changes, base, notes = _changes(bundle, None)
        return str(write_report(bundle, analysis=analysis, changes=changes, baseline=base,
                                change_notes=notes, capture=capture))
    except Exception as exc:  # the bundle is already final: keep it and the exit code
        click.echo(f"pdforensics: warning: report not written ({type(exc).__name__}: {exc}); "
                   f"render it later with `pdforensics report {bundle}`", err=True)
        return None
