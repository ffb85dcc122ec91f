"""Commands that read a bundle or loose files: analyze, verify, stacks."""

from __future__ import annotations

import json
import sys

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import fail_on_option, fails
from pdforensics.errors import ExitStatus


@click.command()
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the same as --format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="markdown: a short summary to paste into a ticket or chat.")
@click.option("--client-dump", "client_dumps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A Go client's goroutine dump to set beside the server's in-flight counts.")
@click.option("--requests", "with_requests", is_flag=True,
              help="Also list the requests seen in the logs: those never finished, the stage "
                   "each reached and for how long, and the per-stage funnel.")
@fail_on_option
@handles_errors
def analyze(bundle: str, as_json: bool, fmt: str, client_dumps: tuple[str, ...],
            with_requests: bool, fail_on: str | None) -> None:
    """Verdict and findings with evidence for BUNDLE (no host contact).

    Exit 0, or 4 when the verdict reaches --fail-on; 1 on an unreadable bundle.
    """
    from pdforensics.analysis.engine import analysis_json, format_analysis_text
    from pdforensics.analysis.summary_md import facts_of, markdown_summary
    from pdforensics.app.bundles import analyze_bundle

    done = analyze_bundle(bundle, client_dumps, with_requests)
    result = done.analysis
    if as_json or fmt == "json":
        doc = analysis_json(result)
        if done.requests is not None:
            from pdforensics.analysis.requests_report import requests_json
            doc["requests"] = requests_json(done.requests)
        click.echo(json.dumps(doc, indent=1))
    elif fmt == "markdown":
        click.echo(markdown_summary(result, facts_of(done.capture)), nl=False)
    else:
        click.echo(format_analysis_text(result))
        if done.requests is not None:
            from pdforensics.analysis.requests_report import format_requests_text
            click.echo(format_requests_text(done.requests), nl=False)
    if fails(result.verdict, fail_on):
        sys.exit(ExitStatus.VERDICT)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print JSON: files (path, kind, error), verdict, findings.")
@fail_on_option
@handles_errors
def triage(files: tuple[str, ...], as_json: bool, fail_on: str | None) -> None:
    """Verdict from loose files: py-spy/faulthandler/Go dumps, /metrics, logs, /server_info.

    Each file's kind is read from its content; `-` is stdin. A Go goroutine dump is set
    beside the rest as a client dump. Exit 0: every file read; 3: some skipped; 1: none;
    4: the verdict reached --fail-on.
    """
    from pdforensics.triage.run import format_triage_text, triage_json, triage_paths

    result = triage_paths(list(files))
    click.echo(json.dumps(triage_json(result), indent=1) if as_json else format_triage_text(result))
    for a in result.artifacts:
        if a.error:
            click.echo(f"pdforensics: skipped {a.path}: {a.error}", err=True)
    verdict = result.analysis.verdict if result.analysis is not None else None
    sys.exit(ExitStatus.VERDICT if fails(verdict, fail_on) else result.exit_code)


@click.command()
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("--secrets", is_flag=True, help="Also scan every file for unredacted secrets (file:line, kind): "
              "pdforensics' own detectors, an entropy check and detect-secrets' rules as a second opinion.")
@click.option("--explain", is_flag=True, help="Say what redaction replaced, by source and kind, with counts "
              "(never a value).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: bundle, ok, secrets_scanned, problems.")
@handles_errors
def verify(bundle: str, secrets: bool, explain: bool, as_json: bool) -> None:
    """Re-check BUNDLE against its manifest (changed, missing, extra files); exit 1 on any problem.

    With --secrets, exit 0 means no check found an unredacted secret: the gate before a bundle
    leaves the cluster."""
    from pdforensics.bundle.ondisk import verify_bundle
    from pdforensics.bundle.secrets_scan import explain as explain_lines
    from pdforensics.bundle.secrets_scan import scan_report

    found, notes = scan_report(bundle) if secrets else ([], [])
    problems = verify_bundle(bundle) + found
    explained = explain_lines(bundle) if explain else []
    if as_json:
        click.echo(json.dumps({"bundle": bundle, "ok": not problems, "secrets_scanned": secrets,
                               "problems": problems, "notes": notes, "redaction": explained}, indent=1))
        sys.exit(ExitStatus.ERROR if problems else ExitStatus.OK)
    for line in explained:
        click.echo(line)
    for p in problems:
        click.echo(p)
    for n in notes:
        click.echo(n, err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        sys.exit(ExitStatus.ERROR)
    click.echo("ok: every file matches its sha256" + ("; no unredacted secret found" if secrets else ""))


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handles_errors
def stacks(files: tuple[str, ...], as_json: bool) -> None:
    """Group stacks from py-spy, pystack, faulthandler, tracebacks, SGLang logs or Go dumps.

    FILE may be a bare dump or any log that holds dumps (docker compose, kubectl, journald,
    timestamped lines); `-` reads stdin. A file without any stack is an error (exit 1); with
    several files, unreadable ones are reported and the rest analysed (exit 3).
    """
    from pdforensics.analysis.stacks_cli import run_stacks

    sys.exit(run_stacks(list(files), as_json, click.echo))


