"""`capture`: evidence from every host at once, within a deadline, into a bundle."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from pdforensics.app.targets import Where
from pdforensics.capture.profiles import Collect
from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import (
    DURATION,
    Output,
    collect_options,
    fail_on_option,
    k8s_options,
    output_options,
    scope_options,
    since_option,
    slurm_options,
    verdict_exit,
    where_options,
)
from pdforensics.errors import ExitStatus


@click.command()
@where_options("Capture")
@click.option("-o", "--out", "out_dir", default="bundles", show_default=True, type=click.Path(file_okay=False),
              help="Directory that receives the bundle.")
@collect_options("full")
@click.option("--request-log", "request_log", type=DURATION, metavar="SECONDS",
              help="Opt-in: turn SGLang request logging on (POST /configure_logging) for SECONDS "
                   "(at most 120, within --deadline) so the logs show request ids, then put the "
                   "previous setting back; a failed restore is an error (exit 1).")
@click.option("--archive/--no-archive", default=True, show_default=True,
              help="Also write BUNDLE.tar.gz beside the bundle: the one file to attach "
                   "(analyze, report, verify, diff and triage read it directly).")
@output_options("quiet", "verbose", "json", "markdown")
@fail_on_option
@since_option
@click.option("--prometheus", help="Prometheus URL: also store its history of the key PD series.")
@click.option("--history", default="2h", show_default=True, type=DURATION,
              help="Window of that history (30m, 2h, ...).")
@click.option("--with-sglang-source", is_flag=True,
              help="Also copy each server's sglang flag/env/metric sources (for `catalog build --from BUNDLE`).")
@click.option("--client-dump", "client_dumps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A Go client's goroutine dump, copied into the bundle (redacted) and set beside the "
                   "servers' in-flight counts; repeatable.")
@click.option("--nccl-ras", is_flag=True,
              help="Also query NCCL RAS (ncclras, NCCL >= 2.24) on each host where the ranks' "
                   "environment does not turn it off: missing ranks, ranks ahead or behind.")
@click.option("--deep", is_flag=True,
              help="Opt-in, it stops each rank while it reads: cuda-gdb `info cuda kernels` on "
                   "every scheduler rank where cuda-gdb exists, after its py-spy dumps, at most "
                   "30 s per rank (stated in the report and the manifest with each pause).")
@click.option("--no-redact", is_flag=True, help="DANGEROUS: write secrets as collected (the manifest says so).")
@click.option("--keep-env", "keep_env", multiple=True, metavar="NAME",
              help="Keep this env var's (or flag's) value readable too (repeatable; recorded in the manifest).")
@scope_options
@slurm_options
@k8s_options
@handles_errors
def capture(where: Where, out_dir: str, collect: Collect, request_log: float | None, archive: bool,
            out: Output, fail_on: str | None, since: Any, prometheus: str | None, history: float,
            with_sglang_source: bool, client_dumps: tuple[str, ...], nccl_ras: bool, deep: bool,
            no_redact: bool,
            keep_env: tuple[str, ...]) -> None:
    """Capture evidence from every host at once, within a deadline, into a bundle.

    Exit codes: 0 complete (whatever the verdict; a server that hangs is evidence, not a
    gap), 3 partial (a host unreachable, a command that timed out, was refused or not found,
    the deadline), 6 nothing collected (no host reachable), 4 the verdict reached --fail-on
    (8 when it is OUTAGE), 1 error (also: --request-log could not put a server's logging
    back), 2 usage or cluster-file error, 130 interrupted (the partial bundle is still written).
    """
    from pdforensics.app.capture import CaptureRequest, take_capture

    request = CaptureRequest(
        out_dir=Path(out_dir), collect=collect, archive=archive, request_log_s=request_log,
        sglang_source=with_sglang_source, prometheus=prometheus, history_s=history,
        client_dumps=client_dumps, redact=not no_redact, keep_env=keep_env,
        markdown_file=out.markdown_file, progress=not out.quiet, since=since,
        nccl_ras=nccl_ras, deep=deep)
    done = take_capture(where, request, warn=lambda line: click.echo(line, err=True))
    doc = done.doc
    if out.as_json:
        click.echo(json.dumps(doc, indent=1))
    elif out.quiet:  # the result line: status, verdict, bundle and archive
        click.echo(" ".join([doc["status"], doc["verdict"] or "-", doc["bundle"],
                             *([doc["archive"]] if doc.get("archive") else [])]))
    else:
        from pdforensics.cli.summary import summary_lines
        from pdforensics.terminal import print_lines

        print_lines(summary_lines(doc, out.verbose))
    for line in done.closing:
        click.echo(line, err=True)
    sys.exit(capture_exit(doc, fail_on))


def capture_exit(doc: dict[str, Any], fail_on: str | None) -> ExitStatus:
    """6 nothing collected, else 1 when --request-log could not put a server's logging back,
    else 4 when the verdict reached --fail-on (8 for an OUTAGE), else 3 partial, else 0."""
    if not doc["collected"]:
        return ExitStatus.NOTHING_COLLECTED
    if doc.get("request_log_left_on"):
        return ExitStatus.ERROR
    if (bad := verdict_exit(doc.get("verdict"), fail_on)) is not None:
        return bad
    return ExitStatus.OK if doc["status"] == "complete" else ExitStatus.PARTIAL
