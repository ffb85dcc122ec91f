"""`doctor`: will the next capture see everything? A checklist per host, with the fixes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import DURATION, cluster_help, quiet_option
from pdforensics.errors import ExitStatus


@click.command()
@click.argument("hosts", nargs=-1)
@click.option("-c", "--cluster", "cluster_file", type=click.Path(dir_okay=False), help=cluster_help())
@click.option("--local", is_flag=True, help="Check this machine (the default with no hosts and no cluster file).")
@click.option("-i", "--identity", type=click.Path(dir_okay=False), help="SSH key for HOST args.")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts for HOST args.")
@click.option("--sudo", is_flag=True, help="Privileged probes through `sudo -n` (HOST args), as capture.")
@click.option("--accept-new-host-keys", is_flag=True, help="Trust unknown host keys (never changed ones).")
@click.option("--deadline", default="45s", show_default=True, type=DURATION,
              help="How long the whole run may take.")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False),
              help="Keep the light capture's bundle here (with doctor.json); default: not kept.")
@click.option("--bundles", "bundles_dir", default="bundles", show_default=True,
              type=click.Path(file_okay=False), help="Where captures go: checked for free disk.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (stable check keys).")
@click.option("-v", "--verbose", is_flag=True, help="Also list the checks that pass.")
@quiet_option
@handles_errors
def doctor(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
           known_hosts: str | None, sudo: bool, accept_new_host_keys: bool, deadline: float,
           out_dir: str | None, bundles_dir: str, as_json: bool, verbose: bool, quiet: bool) -> None:
    """Check the cluster's forensic readiness: SSH and sudo, py-spy and ptrace, GPU tools,
    metrics and logs, PD safeguards, version and setting consistency, disk room.

    Runs a light capture (no stacks of the servers) through the same transport as `capture`.
    Exit codes: 0 nothing failed (warnings allowed), 7 at least one check failed, 1 error,
    2 usage or cluster-file error. Check keys and fixes: docs/doctor.md.
    """
    from pdforensics.cli.capture import _progress, resolve_cluster
    from pdforensics.doctor.run import DoctorOptions, run_doctor
    from pdforensics.doctor.text import format_report

    cluster = resolve_cluster(hosts, cluster_file, local, identity, known_hosts, sudo)
    dirs = [Path(bundles_dir)] + ([Path(cluster.store)] if cluster.store else [])
    options = DoctorOptions(deadline_s=deadline, out_dir=Path(out_dir) if out_dir else None,
                            accept_new_host_keys=accept_new_host_keys or cluster.accept_new_host_keys,
                            evidence_dirs=tuple(dirs))
    progress = _progress([h.name for h in cluster.hosts], deadline, quiet or as_json)
    try:
        report = run_doctor(cluster, options, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
    elif quiet:
        click.echo(report.summary())
    else:
        click.echo(format_report(report, verbose=verbose), nl=False)
    sys.exit(ExitStatus.OK if report.ready else ExitStatus.NOT_READY)
