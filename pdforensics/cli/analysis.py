"""Commands that read a bundle or loose files: analyze, verify, stacks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import (
    fail_on_option,
    markdown_option,
    since_option,
    verbose_option,
    verdict_exit,
)
from pdforensics.errors import ExitStatus


@click.command()
@click.argument("bundle", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the same as --format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="markdown: a short summary to paste into a ticket or chat.")
@click.option("--client-dump", "client_dumps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A Go client's goroutine dump to set beside the server's in-flight counts.")
@click.option("--requests", "with_requests", is_flag=True,
              help="Also list the requests seen in the logs: those never finished, the stage "
                   "each reached and for how long, and the per-stage funnel.")
@markdown_option
@fail_on_option
@since_option
@verbose_option
@handles_errors
def analyze(bundle: str, as_json: bool, fmt: str, client_dumps: tuple[str, ...],
            with_requests: bool, markdown_file: str | None, fail_on: str | None, since: Any,
            verbose: bool) -> None:
    """Verdict and findings with evidence for BUNDLE, a bundle directory or its .tar.gz
    (no host contact).

    Exit 0, 4 when the verdict reaches --fail-on (8 for an OUTAGE); 1 on an unreadable or
    refused bundle.
    """
    from pdforensics.untrusted.archive import opened_bundle

    with opened_bundle(bundle) as path:
        _analyze(path, as_json, fmt, client_dumps, with_requests, fail_on, since, verbose,
                 markdown_file)


def _analyze(bundle: Path, as_json: bool, fmt: str, client_dumps: tuple[str, ...],
             with_requests: bool, fail_on: str | None, since: Any, verbose: bool,
             markdown_file: str | None = None) -> None:
    from pdforensics.analysis.engine import analysis_json
    from pdforensics.analysis.summary_md import facts_of, markdown_summary
    from pdforensics.analysis.text_out import analysis_lines
    from pdforensics.app.bundles import analyze_bundle
    from pdforensics.terminal import print_lines

    done = analyze_bundle(bundle, client_dumps, with_requests, since=since)
    result, capture = done.analysis, done.capture
    if markdown_file:
        _write(markdown_file, markdown_summary(result, facts_of(capture)))
    if as_json or fmt == "json":
        doc = analysis_json(result)
        if done.requests is not None:
            from pdforensics.analysis.requests_report import requests_json
            doc["requests"] = requests_json(done.requests)
        click.echo(json.dumps(doc, indent=1))
    elif fmt == "markdown":
        click.echo(markdown_summary(result, facts_of(done.capture)), nl=False)
    else:
        print_lines(analysis_lines(result, verbose, reference=capture.started_at))
        if done.requests is not None:
            from pdforensics.analysis.requests_report import format_requests_text
            click.echo(format_requests_text(done.requests), nl=False)
    if (bad := verdict_exit(result.verdict, fail_on)) is not None:
        sys.exit(bad)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print JSON: files (path, kind, error), verdict, findings.")
@markdown_option
@fail_on_option
@since_option
@verbose_option
@handles_errors
def triage(files: tuple[str, ...], as_json: bool, markdown_file: str | None, fail_on: str | None,
           since: Any, verbose: bool) -> None:
    """Verdict from loose files: py-spy/faulthandler/Go dumps, /metrics, logs, /server_info.

    Each file's kind is read from its content; `-` is stdin. A Go goroutine dump is set
    beside the rest as a client dump. Exit 0: every file read; 3: some skipped; 1: none;
    4: the verdict reached --fail-on.
    """
    from pdforensics.cli.exiting import exit_now
    from pdforensics.gcpause import collector_paused
    from pdforensics.terminal import print_lines
    from pdforensics.triage.run import triage_json, triage_lines, triage_paths

    with collector_paused():  # a one-shot reading of files it was given (gcpause.py)
        result = triage_paths(list(files), since)
    if markdown_file and result.analysis is not None:
        from pdforensics.analysis.summary_md import BundleFacts, markdown_summary

        _write(markdown_file, markdown_summary(result.analysis, BundleFacts(
            name=f"triage of {len(files)} file(s)")))
    if as_json:
        click.echo(json.dumps(triage_json(result), indent=1))
    else:
        print_lines(triage_lines(result, verbose))
    for a in result.artifacts:
        if a.error:
            click.echo(f"pdforensics: skipped {a.path}: {a.error}", err=True)
    verdict = result.analysis.verdict if result.analysis is not None else None
    bad = verdict_exit(verdict, fail_on)
    exit_now(bad if bad is not None else result.exit_code)  # no teardown of a large reading


@click.command()
@click.argument("bundle", type=click.Path(exists=True))
@click.option("--secrets", is_flag=True, help="Also scan every file for unredacted secrets (file:line, kind): "
              "pdforensics' own detectors, an entropy check and detect-secrets' rules as a second opinion.")
@click.option("--explain", is_flag=True, help="Say what redaction replaced, by source and kind, with counts "
              "(never a value).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: bundle, ok, secrets_scanned, problems.")
@handles_errors
def verify(bundle: str, secrets: bool, explain: bool, as_json: bool) -> None:
    """Re-check BUNDLE (a directory or its .tar.gz) against its manifest (changed, missing,
    extra files); exit 1 on any problem (an archive with a member a bundle cannot hold is
    refused whole).

    With --secrets, exit 0 means no check found an unredacted secret: the gate before a bundle
    leaves the cluster."""
    from pdforensics.bundle.ondisk import verify_bundle
    from pdforensics.bundle.secrets_scan import explain as explain_lines
    from pdforensics.bundle.secrets_scan import scan_report
    from pdforensics.untrusted.archive import opened_bundle

    with opened_bundle(bundle) as path:
        found, notes = scan_report(path) if secrets else ([], [])
        problems = verify_bundle(path) + found
        explained = explain_lines(path) if explain else []
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


def _write(target: str, text: str) -> None:
    """--markdown FILE (- for stdout)."""
    if target == "-":
        click.echo(text, nl=False)
    else:
        Path(target).write_text(text, encoding="utf-8")
