"""`doctor`: will the next capture see everything? A checklist per host, with the fixes."""

from __future__ import annotations

import json
import sys

import click

from pdforensics.app.targets import Where
from pdforensics.capture.profiles import Collect
from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import Output, collect_options, output_options, where_options
from pdforensics.errors import ExitStatus


@click.command()
@where_options("Check")
@collect_options("doctor", "deadline")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False),
              help="Keep the light capture's bundle here (with doctor.json); default: not kept.")
@click.option("--bundles", "bundles_dir", default="bundles", show_default=True,
              type=click.Path(file_okay=False), help="Where captures go: checked for free disk.")
@output_options("json", "verbose", "quiet", json="Print one JSON object (stable check keys).",
                verbose="Also list the checks that pass.")
@handles_errors
def doctor(where: Where, collect: Collect, out_dir: str | None, bundles_dir: str, out: Output) -> None:
    """Check the cluster's forensic readiness: SSH and sudo, py-spy and ptrace, GPU tools,
    metrics and logs, PD safeguards, version and setting consistency, disk room.

    Runs a light capture (no stacks of the servers) through the same transport as `capture`.
    Exit codes: 0 nothing failed (warnings allowed), 7 at least one check failed, 1 error,
    2 usage or cluster-file error. Check keys and fixes: docs/doctor.md.
    """
    from pdforensics.app.doctor import check_readiness
    from pdforensics.doctor.text import format_report

    report = check_readiness(where, collect, out_dir, bundles_dir, progress=not (out.quiet or out.as_json))
    if out.as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
    elif out.quiet:
        click.echo(report.summary())
    else:
        click.echo(format_report(report, verbose=out.verbose), nl=False)
    sys.exit(ExitStatus.OK if report.ready else ExitStatus.NOT_READY)
