"""Thin click commands: parse options, one core call, print, exit code."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from pdforensics import __version__
from pdforensics.cli_report import capture_report, report
from pdforensics.cli_store import STORE_COMMANDS
from pdforensics.errors import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, PdforensicsError

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Map PdforensicsError to its exit code with a one-line message; no traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        try:
            return fn(*args, **kwargs)
        except PdforensicsError as exc:
            if ctx.find_root().params.get("traceback"):
                raise
            click.echo(f"pdforensics: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("pdforensics: interrupted", err=True)
            ctx.exit(130)
        except OSError as exc:  # disk full, permissions: the file and the reason, one line
            if ctx.find_root().params.get("traceback"):
                raise
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"pdforensics: error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(EXIT_ERROR)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pdforensics")
@click.option("--traceback", is_flag=True, help="Show Python tracebacks on errors (debugging).")
def main(traceback: bool) -> None:
    """Evidence-first forensics for SGLang prefill-decode clusters.

    capture during a wedge, analyze/report a bundle, lab to rehearse.
    """


# -- capture ----------------------------------------------------------------------------------
@main.command()
@click.argument("hosts", nargs=-1)
@click.option("-c", "--cluster", "cluster_file", type=click.Path(dir_okay=False),
              help="Cluster file (TOML).")
@click.option("--local", is_flag=True, help="Capture this machine (the default with no hosts).")
@click.option("-i", "--identity", type=click.Path(dir_okay=False), help="SSH key for HOST args.")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts for HOST args.")
@click.option("--sudo", is_flag=True, help="Run privileged collectors through `sudo -n` (HOST args).")
@click.option("--accept-new-host-keys", is_flag=True, help="Trust unknown host keys (never changed ones).")
@click.option("-o", "--out", "out_dir", default="bundles", show_default=True, type=click.Path(file_okay=False),
              help="Directory that receives the bundle.")
@click.option("--deadline", default=60.0, show_default=True, help="Seconds the whole capture may take.")
@click.option("--samples", default=3, show_default=True, help="/metrics samples per server.")
@click.option("--interval", default=2.0, show_default=True, help="Seconds between /metrics samples.")
@click.option("--no-stacks", is_flag=True, help="Skip py-spy dumps.")
@click.option("--stack-dumps", default=3, show_default=True,
              help="py-spy dumps per process, spread over >= 10 s (3 tell stuck from busy).")
@click.option("--archive", is_flag=True, help="Also write BUNDLE.tar.gz.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--prometheus", help="Prometheus URL: also store its history of the key PD series.")
@click.option("--history", default="2h", show_default=True, help="Window of that history (30m, 2h, ...).")
@click.option("--with-sglang-source", is_flag=True,
              help="Also copy each server's sglang flag/env/metric sources (for `catalog build --from BUNDLE`).")
@click.option("--no-redact", is_flag=True, help="DANGEROUS: write secrets as collected (the manifest says so).")
@handles_errors
def capture(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
            known_hosts: str | None, sudo: bool, accept_new_host_keys: bool, out_dir: str,
            deadline: float, samples: int, interval: float, no_stacks: bool, stack_dumps: int,
            archive: bool, as_json: bool, prometheus: str | None, history: str, with_sglang_source: bool,
            no_redact: bool) -> None:
    """Capture evidence from every host at once, within a deadline, into a bundle.

    Exit codes: 0 complete, 3 partial (some host or collector missing), 1 error,
    130 interrupted (the partial bundle is still written).
    """
    from pdforensics.capture import CaptureOptions, outcome_json, run_capture
    from pdforensics.planner import PlanOptions

    cluster = _cluster(hosts, cluster_file, local, identity, known_hosts, sudo)
    options = CaptureOptions(
        out_dir=Path(out_dir), deadline_s=deadline, archive=archive,
        accept_new_host_keys=accept_new_host_keys or cluster.accept_new_host_keys,
        plan=PlanOptions(samples=samples, interval_s=interval, stacks=not no_stacks,
                         stack_dumps=stack_dumps, sglang_source=with_sglang_source),
    )
    progress = _progress if sys.stderr.isatty() and not as_json else None
    from pdforensics.redact import NO_REDACT_WARNING, NoRedactor
    from pdforensics.watch.history import sidecars_for

    if no_redact:
        click.echo(NO_REDACT_WARNING, err=True)
    outcome = run_capture(cluster, options, progress=progress, redactor=NoRedactor() if no_redact else None,
                          sidecars=sidecars_for(prometheus, history))
    doc = outcome_json(outcome)
    from pdforensics.loaded import load_capture

    loaded = load_capture(outcome.bundle)  # read once for both the analysis and the report
    analysis = _analyze_bundle(outcome.bundle, loaded)
    doc["verdict"] = analysis.get("verdict") if analysis else None
    doc["findings"] = analysis.get("findings", []) if analysis else []
    doc["report"] = capture_report(outcome.bundle, analysis, loaded)
    from pdforensics.bundle import make_private

    make_private(outcome.bundle)
    doc["stored"] = _file_in_store(cluster, outcome.bundle)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
    else:
        _print_outcome(doc)
    if no_redact:
        click.echo(NO_REDACT_WARNING, err=True)
    sys.exit(EXIT_OK if outcome.status == "complete" else EXIT_PARTIAL)


def _cluster(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
             known_hosts: str | None, sudo: bool) -> Any:
    from pdforensics.config import hosts_from_args, load_cluster_file, local_cluster
    from pdforensics.errors import ConfigError

    if cluster_file and hosts:
        raise ConfigError("give either -c FILE or HOST arguments, not both")
    if cluster_file:
        return load_cluster_file(cluster_file)
    if hosts:
        return hosts_from_args(hosts, identity, known_hosts, sudo)
    return local_cluster()


def _analyze_bundle(bundle: Path, capture: Any = None) -> dict[str, Any] | None:
    """Analysis result for a bundle, when the analysis layer is present."""
    try:
        from pdforensics.analysis.engine import analyze_path
    except ImportError:
        return None
    result: dict[str, Any] = analyze_path(bundle, capture=capture)
    return result


def _file_in_store(cluster: Any, bundle: Path) -> dict[str, Any] | None:
    """File the bundle when a store is configured ($PDFORENSICS_STORE or the cluster file)."""
    from pdforensics.store.filing import file_if_configured

    return file_if_configured(cluster, bundle)


def _progress(host: str, text: str) -> None:
    click.echo(f"  {host}: {text}", err=True)


def _print_outcome(doc: dict[str, Any]) -> None:
    click.echo(f"bundle: {doc['bundle']}")
    click.echo(f"status: {doc['status']}")
    if doc.get("report"):
        click.echo(f"report: {doc['report']}")
    if doc.get("stored"):
        click.echo(f"store: {doc['stored'].get('path') or doc['stored'].get('error')}")
    for reason in doc["partial_reasons"]:
        click.echo(f"  partial: {reason}")
    if doc.get("verdict"):
        click.echo(f"verdict: {doc['verdict']}")
        for f in doc["findings"][:5]:
            click.echo(f"  [{f['severity']}] {f['key']}: {f['title']}")
    gaps = doc["gaps"]
    if gaps:
        click.echo(f"gaps: {len(gaps)}")
        for g in gaps[:15]:
            click.echo(f"  {g['host']} {g['key']}: {g['error']}" + (f" ({g['stderr']})" if g["stderr"] else ""))
        if len(gaps) > 15:
            click.echo(f"  ... {len(gaps) - 15} more in manifest.json")


# -- analysis ---------------------------------------------------------------------------------
@main.command()
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--client-dump", "client_dumps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A Go client's goroutine dump to set beside the server's in-flight counts.")
@handles_errors
def analyze(bundle: str, as_json: bool, client_dumps: tuple[str, ...]) -> None:
    """Verdict and findings with evidence for BUNDLE (no host contact)."""
    from pdforensics.analysis.engine import analysis_json, format_analysis_text
    from pdforensics.analysis.engine import analyze as run_rules
    from pdforensics.loaded import load_capture

    result = run_rules(load_capture(bundle), [Path(c) for c in client_dumps])
    click.echo(json.dumps(analysis_json(result), indent=1) if as_json else format_analysis_text(result))


# -- bundle tools -----------------------------------------------------------------------------
@main.command()
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("--secrets", is_flag=True, help="Also scan every file for unredacted secrets (file:line, kind).")
@handles_errors
def verify(bundle: str, secrets: bool) -> None:
    """Re-check BUNDLE against its manifest (changed, missing, extra files); exit 1 on any problem."""
    from pdforensics.bundle import verify_bundle
    from pdforensics.secrets_scan import scan_report

    problems = verify_bundle(bundle) + (scan_report(bundle) if secrets else [])
    for p in problems:
        click.echo(p)
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo("ok: every file matches its sha256" + ("; no unredacted secret found" if secrets else ""))


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handles_errors
def stacks(files: tuple[str, ...], as_json: bool) -> None:
    """Group stacks from py-spy dumps, watchdog logs, faulthandler or Go goroutine dumps."""
    from pdforensics.analysis.stacks import (
        analyze_stacks,
        format_stacks_text,
        load_stack_files,
        stacks_json,
    )

    dumps = load_stack_files(list(files))
    report = analyze_stacks(dumps)
    click.echo(json.dumps(stacks_json(report), indent=1) if as_json else format_stacks_text(report))
    for d in dumps:
        if d.dump.truncated:
            click.echo(f"note: {d.source} ends mid-line (cut short); its last line was dropped", err=True)


# -- lab --------------------------------------------------------------------------------------
@main.group()
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


# -- catalog ----------------------------------------------------------------------------------
@main.group()
def catalog() -> None:
    """SGLang flags, env vars and metric names, read from sglang's own source."""


@catalog.command("build")
@click.option("--from", "src", required=True,
              help="sglang wheel, source tree, site-packages/sglang, or a bundle captured with --with-sglang-source.")
@click.option("-o", "--out", help="Output JSON file.")
@handles_errors
def catalog_build(src: str, out: str | None) -> None:
    """Build a catalog JSON from an sglang wheel or source tree (read with ast, never imported)."""
    from pdforensics.catalog import cli_build

    click.echo(str(cli_build(src, out)))


for _command in STORE_COMMANDS:
    main.add_command(_command)
main.add_command(report)

from pdforensics.cli_watch import watch  # noqa: E402

main.add_command(watch)

if __name__ == "__main__":  # pragma: no cover
    main()
