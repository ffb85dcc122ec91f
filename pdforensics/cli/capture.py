"""`capture`: evidence from every host at once, within a deadline, into a bundle."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.errors import ExitStatus
from pdforensics.terminal import field


@click.command()
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
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write a short Markdown summary to paste into a ticket (- for stdout).")
@click.option("--prometheus", help="Prometheus URL: also store its history of the key PD series.")
@click.option("--history", default="2h", show_default=True, help="Window of that history (30m, 2h, ...).")
@click.option("--with-sglang-source", is_flag=True,
              help="Also copy each server's sglang flag/env/metric sources (for `catalog build --from BUNDLE`).")
@click.option("--client-dump", "client_dumps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A Go client's goroutine dump, copied into the bundle (redacted) and set beside the "
                   "servers' in-flight counts; repeatable.")
@click.option("--no-redact", is_flag=True, help="DANGEROUS: write secrets as collected (the manifest says so).")
@click.option("--keep-env", "keep_env", multiple=True, metavar="NAME",
              help="Keep this env var's (or flag's) value readable too (repeatable; recorded in the manifest).")
@handles_errors
def capture(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
            known_hosts: str | None, sudo: bool, accept_new_host_keys: bool, out_dir: str,
            deadline: float, samples: int, interval: float, no_stacks: bool, stack_dumps: int,
            archive: bool, as_json: bool, markdown_file: str | None, prometheus: str | None,
            history: str, with_sglang_source: bool,
            client_dumps: tuple[str, ...], no_redact: bool, keep_env: tuple[str, ...]) -> None:
    """Capture evidence from every host at once, within a deadline, into a bundle.

    Exit codes: 0 complete, 3 partial (some host or collector missing), 1 error,
    130 interrupted (the partial bundle is still written).
    """
    from pdforensics.capture import CaptureOptions, outcome_json, run_capture
    from pdforensics.planner import PlanOptions

    cluster = resolve_cluster(hosts, cluster_file, local, identity, known_hosts, sudo)
    options = CaptureOptions(
        out_dir=Path(out_dir), deadline_s=deadline, archive=archive,
        accept_new_host_keys=accept_new_host_keys or cluster.accept_new_host_keys,
        plan=PlanOptions(samples=samples, interval_s=interval, stacks=not no_stacks,
                         stack_dumps=stack_dumps, sglang_source=with_sglang_source),
    )
    progress = _progress if sys.stderr.isatty() and not as_json else None
    from pdforensics.analysis.client_dumps import client_dump_sidecars
    from pdforensics.prometheus.history import sidecars_for
    from pdforensics.redact import NO_REDACT_WARNING, Allowlist, NoRedactor, Redactor

    if no_redact:
        click.echo(NO_REDACT_WARNING, err=True)
    from pdforensics.recover import unfinished_notice

    if (notice := unfinished_notice(Path(out_dir))) is not None:
        click.echo(notice, err=True)
    outcome = run_capture(cluster, options, progress=progress, redactor=NoRedactor() if no_redact
                          else Redactor(allow=Allowlist.with_extra(keep_env)),
                          sidecars=[*sidecars_for(prometheus, history), *client_dump_sidecars(client_dumps)])
    from pdforensics.analysis.result_json import analysis_json
    from pdforensics.finish import finish_bundle
    from pdforensics.store.filing import configured_store

    done = finish_bundle(outcome.bundle, store=configured_store(cluster))
    for warning in done.warnings:
        click.echo(f"pdforensics: warning: {warning}", err=True)
    doc = outcome_json(outcome)
    doc["verdict"] = done.analysis.verdict if done.analysis else None
    doc["findings"] = analysis_json(done.analysis)["findings"] if done.analysis else []
    doc["report"] = str(done.report) if done.report else None
    doc["stored"] = done.filing.as_json() if done.filing else None
    if as_json:
        click.echo(json.dumps(doc, indent=1))
    else:
        _print_outcome(doc)
    if markdown_file and done.analysis is None:
        click.echo("pdforensics: warning: no analysis, so no Markdown summary", err=True)
    elif markdown_file and done.analysis is not None:
        from pdforensics.analysis.summary_md import write_markdown

        write_markdown(markdown_file, done.analysis, outcome.bundle, done.report)
    if no_redact:
        click.echo(NO_REDACT_WARNING, err=True)
    sys.exit(ExitStatus.OK if outcome.status == "complete" else ExitStatus.PARTIAL)


def resolve_cluster(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
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


def _progress(host: str, text: str) -> None:
    click.echo(f"  {field(host)}: {field(text)}", err=True)


def _print_outcome(doc: dict[str, Any]) -> None:
    click.echo(f"bundle: {doc['bundle']}")
    click.echo(f"status: {doc['status']}")
    if doc.get("report"):
        click.echo(f"report: {doc['report']}")
    if doc.get("stored"):
        click.echo(f"store: {doc['stored'].get('path') or doc['stored'].get('error')}")
    for reason in doc["partial_reasons"]:
        click.echo(f"  partial: {field(reason)}")
    if doc.get("verdict"):
        click.echo(f"verdict: {doc['verdict']}")
        for f in doc["findings"][:5]:
            click.echo(f"  [{f['severity']}] {f['key']}: {field(f['title'])}")
    gaps = doc["gaps"]
    if gaps:
        click.echo(f"gaps: {len(gaps)}")
        for g in gaps[:15]:
            click.echo(f"  {field(g['host'])} {field(g['key'])}: {field(g['error'])}"
                       + (f" ({field(g['stderr'])})" if g["stderr"] else ""))
        if len(gaps) > 15:
            click.echo(f"  ... {len(gaps) - 15} more in manifest.json")


