"""`lab`: a rehearsal PD cluster of local processes, with faults to switch on."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pdforensics.cli.errors import handles_errors


@click.group()
def lab() -> None:
    """A rehearsal PD cluster of local processes, with faults to switch on."""


def _lab_dir(path: str | None) -> Path:
    return Path(path or "lab-run").resolve()


@lab.command("up")
@click.option("--fault", default="healthy", show_default=True, help="Fault to start with.")
@click.option("--ssh", is_flag=True, help="Also start one loopback sshd per lab host.")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@click.option("--base-port", type=int, help="Shift every lab port (run several labs at once).")
@click.option("--sudo-user", help="Also allow SSH as this non-root user with passwordless sudo.")
@click.option("--no-titles", is_flag=True,
              help="Ranks keep their python command lines (no sglang::scheduler_* titles).")
@handles_errors
def lab_up(fault: str, ssh: bool, lab_dir: str | None, base_port: int | None, sudo_user: str | None,
           no_titles: bool) -> None:
    """Start router, prefill and decode servers (and sshd hosts with --ssh)."""
    from pdforensics.lab import FAULTS
    from pdforensics.lab import lab_up as up

    if fault not in FAULTS:
        raise click.BadParameter(f"choose from {', '.join(FAULTS)}", param_hint="--fault")
    info = up(_lab_dir(lab_dir), fault=fault, ssh=ssh, base_port=base_port, sudo_user=sudo_user,
              titles=not no_titles)
    click.echo(f"lab up in {info.dir} with fault {info.fault}")
    click.echo(f"cluster file: {info.cluster_file}")
    click.echo(f"capture it:   pdforensics capture -c {info.cluster_file}")


@lab.command("down")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@handles_errors
def lab_down(lab_dir: str | None) -> None:
    """Stop every process of the lab."""
    from pdforensics.lab import lab_down as down

    down(_lab_dir(lab_dir))
    click.echo("lab down")


@lab.command("status")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@handles_errors
def lab_status(lab_dir: str | None) -> None:
    """Show the lab's processes and fault."""
    from pdforensics.lab import lab_status as status

    click.echo(json.dumps(status(_lab_dir(lab_dir)), indent=1, default=str))


@lab.command("fault")
@click.argument("name")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@handles_errors
def lab_fault(name: str, lab_dir: str | None) -> None:
    """Switch the running lab to fault NAME."""
    from pdforensics.lab import FAULTS, set_fault

    if name not in FAULTS:
        raise click.BadParameter(f"choose from {', '.join(FAULTS)}", param_hint="NAME")
    set_fault(_lab_dir(lab_dir), name)
    click.echo(f"fault: {name}")


