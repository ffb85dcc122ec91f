"""The `recover` command: finalise or remove what a killed capture left behind."""

from __future__ import annotations

from pathlib import Path

import click

from pdforensics.cli.errors import handles_errors


@click.command("recover")
@click.argument("tmpdir", type=click.Path(exists=True, file_okay=False))
@click.option("--discard", is_flag=True, help="Remove the directory instead of finalising it.")
@handles_errors
def recover(tmpdir: str, discard: bool) -> None:
    """Finalise TMPDIR, the .NAME.PID.tmp directory of a killed capture, as a partial bundle.

    Everything it gathered is kept, redacted again and hashed, and the manifest says
    `partial` and `recovered`; the result verifies with `pdforensics verify`.
    """
    from pdforensics.capture.recover import discard as remove
    from pdforensics.capture.recover import recover as finalise

    if discard:
        remove(Path(tmpdir))
        click.echo(f"removed {tmpdir}")
    else:
        click.echo(f"recovered: {finalise(Path(tmpdir))} (partial)")
