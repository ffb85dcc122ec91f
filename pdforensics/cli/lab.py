"""`lab`: a rehearsal PD cluster of local processes, with faults to switch on."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.lab.faults import ALL_FAULTS
from pdforensics.terminal import field


@click.group()
def lab() -> None:
    """A rehearsal PD cluster of local processes, with faults to switch on."""


def _lab_dir(path: str | None) -> Path:
    return Path(path or "lab-run").resolve()


@lab.command("up")
@click.option("--fault", default="healthy", show_default=True, type=click.Choice(ALL_FAULTS),
              help="Fault to start with (--engine sglang: healthy, rank-stopped, forgotten-requests, "
                   "prefill-frozen, kv-full, watchdog, server-killed, breaker-open).")
@click.option("--ssh", is_flag=True, help="Also start one loopback sshd per lab host.")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@click.option("--base-port", type=int, help="Shift every lab port (run several labs at once).")
@click.option("--sudo-user", help="Also allow SSH as this non-root user with passwordless sudo.")
@click.option("--no-titles", is_flag=True,
              help="Ranks keep their python command lines (no sglang::scheduler_* titles).")
@click.option("--router", "router", default="smg", show_default=True, type=click.Choice(("smg", "standin")),
              help="smg: the real SGLang model gateway; standin: the old `sglang_router` command line.")
@click.option("--slurm", is_flag=True, help="Run the servers as a Slurm batch job, one srun step per "
                                            "worker (on the Slurm that SLURM_CONF names; docs/slurm.md).")
@click.option("--engine", default="standin", show_default=True, type=click.Choice(("standin", "sglang")),
              help="standin: the fast stand-in servers; sglang: the real SGLang 0.5.23 on the CPU behind "
                   "the real smg (its environment, ~7 GB, is built once into the user's cache: "
                   "docs/lab.md).")
@click.option("--tp", type=click.IntRange(1, 2), default=1, show_default=True,
              help="--engine sglang: tensor parallel ranks per server (2: gloo between two CPU ranks).")
@handles_errors
def lab_up(fault: str, ssh: bool, lab_dir: str | None, base_port: int | None, sudo_user: str | None,
           no_titles: bool, router: str, slurm: bool = False, engine: str = "standin", tp: int = 1) -> None:
    """Start router, prefill and decode servers (and sshd hosts with --ssh)."""
    from pdforensics.lab import lab_up as up

    if engine == "sglang":
        if slurm or sudo_user or no_titles or router != "smg":
            raise click.UsageError("--engine sglang runs with smg, titles, no --slurm and no --sudo-user")
        info = up(_lab_dir(lab_dir), fault=fault, ssh=ssh, base_port=base_port, engine=engine, tp=tp,
                  say=lambda line: click.echo(field(line), err=True))
        click.echo(f"lab up in {info.dir} with the real SGLang engine, fault {info.fault}")
        click.echo(f"cluster file: {info.cluster_file}")
        click.echo(f"capture it:   pdforensics capture -c {info.cluster_file}")
        return

    if slurm:
        from pdforensics.lab.slurm_job import slurm_lab_up

        job = slurm_lab_up(_lab_dir(lab_dir), fault=fault, base_port=base_port)
        click.echo(f"lab up in {job.dir} with fault {fault}: slurm job {job.job_id} on {job.node}, "
                   f"worker logs in {job.out_dir}")
        click.echo(f"capture it:   pdforensics capture --slurm-job {job.job_id}")
        return
    info = up(_lab_dir(lab_dir), fault=fault, ssh=ssh, base_port=base_port, sudo_user=sudo_user,
              titles=not no_titles, router=router)
    click.echo(f"lab up in {info.dir} with fault {info.fault}")
    click.echo(f"cluster file: {info.cluster_file}")
    click.echo(f"capture it:   pdforensics capture -c {info.cluster_file}")


@lab.command("down")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@handles_errors
def lab_down(lab_dir: str | None) -> None:
    """Stop every process of the lab (and cancel its Slurm job, if it runs as one)."""
    from pdforensics.lab.slurm_job import slurm_lab_down as down

    down(_lab_dir(lab_dir))
    click.echo("lab down")


@lab.command("status")
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: dir, fault, running, processes.")
@handles_errors
def lab_status(lab_dir: str | None, as_json: bool) -> None:
    """Show the lab's processes and fault."""
    from pdforensics.lab import lab_status as status

    st = status(_lab_dir(lab_dir))
    if as_json:
        click.echo(json.dumps({"dir": str(st.dir), "fault": st.fault, "running": st.running,
                               "processes": [{"name": p.name, "pid": p.pid, "alive": p.alive}
                                             for p in st.processes]}, indent=1))
        return
    state = "running" if st.running else "not running"
    click.echo(f"lab in {st.dir}: {state}" + (f", fault {st.fault}" if st.fault else ""))
    for p in st.processes:
        click.echo(f"  {'up  ' if p.alive else 'DOWN'} {p.pid:>7}  {field(p.name)}")


@lab.command("fault")
@click.argument("name", type=click.Choice(ALL_FAULTS))
@click.option("--dir", "lab_dir", type=click.Path(file_okay=False), help="Lab directory [./lab-run].")
@handles_errors
def lab_fault(name: str, lab_dir: str | None) -> None:
    """Switch the running lab to fault NAME."""
    from pdforensics.lab import set_fault

    set_fault(_lab_dir(lab_dir), name)
    click.echo(f"fault: {name}")


