"""`capture`: evidence from every host at once, within a deadline, into a bundle."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import (
    DURATION,
    cluster_help,
    fail_on_option,
    quiet_option,
    scope_options,
    since_option,
    verbose_option,
    verdict_exit,
)
from pdforensics.cli.slurm import apply_slurm, slurm_options
from pdforensics.errors import ExitStatus

PREWARM_AFTER_S = 3.0  # a capture's first seconds: connections, discovery, first py-spy dumps


@click.command()
@click.argument("hosts", nargs=-1)
@click.option("-c", "--cluster", "cluster_file", type=click.Path(dir_okay=False), help=cluster_help())
@click.option("--local", is_flag=True, help="Capture this machine (the default with no hosts and no cluster file).")
@click.option("-i", "--identity", type=click.Path(dir_okay=False), help="SSH key for HOST args.")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts for HOST args.")
@click.option("--sudo", is_flag=True, help="Run privileged collectors through `sudo -n` (HOST args).")
@click.option("--accept-new-host-keys", is_flag=True, help="Trust unknown host keys (never changed ones).")
@click.option("-o", "--out", "out_dir", default="bundles", show_default=True, type=click.Path(file_okay=False),
              help="Directory that receives the bundle.")
@click.option("--deadline", default="60s", show_default=True, type=DURATION,
              help="How long the whole capture may take (60s, 2m, ...).")
@click.option("--samples", default=3, show_default=True, type=click.IntRange(min=1),
              help="/metrics samples per server (and py-spy dumps per process, unless "
                   "--stack-dumps says otherwise).")
@click.option("--interval", default="2s", show_default=True, type=DURATION, help="Time between /metrics samples.")
@click.option("--no-stacks", is_flag=True, help="Skip py-spy dumps.")
@click.option("--stack-dumps", type=click.IntRange(min=1),
              help="py-spy dumps per process, spread over >= 10 s (3 tell stuck from busy); "
                   "default: as many as --samples, at most 3 (--samples 1: one quick dump).")
@click.option("--no-probes", is_flag=True, help="Skip the /health_generate probe (one tiny generation per server).")
@click.option("--request-log", "request_log", type=DURATION, metavar="SECONDS",
              help="Opt-in: turn SGLang request logging on (POST /configure_logging) for SECONDS "
                   "(at most 120, within --deadline) so the logs show request ids, then put the "
                   "previous setting back; a failed restore is an error (exit 1).")
@click.option("--archive/--no-archive", default=True, show_default=True,
              help="Also write BUNDLE.tar.gz beside the bundle: the one file to attach "
                   "(analyze, report, verify, diff and triage read it directly).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write a short Markdown summary to paste into a ticket (- for stdout).")
@quiet_option
@verbose_option
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
@click.option("--no-redact", is_flag=True, help="DANGEROUS: write secrets as collected (the manifest says so).")
@click.option("--keep-env", "keep_env", multiple=True, metavar="NAME",
              help="Keep this env var's (or flag's) value readable too (repeatable; recorded in the manifest).")
@scope_options
@slurm_options
@click.option("--k8s", "use_k8s", is_flag=True,
              help="Capture SGLang pods through your kubectl and kubeconfig (docs/kubernetes.md).")
@click.option("-n", "--namespace", help="--k8s: the pods' namespace (default: the context's).")
@click.option("-l", "--selector", help="--k8s: label selector, or a preset: lws, rbg, ome, gateway-pd.")
@click.option("--context", help="--k8s: kubeconfig context.")
@click.option("--k8s-debug", is_flag=True,
              help="--k8s: add an ephemeral debug container per pod for py-spy (changes the pod; "
                   "it cannot be removed, it exits after the deadline).")
@click.option("--k8s-debug-image", help="--k8s-debug: image with py-spy (default python:3.12-slim).")
@handles_errors
def capture(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
            known_hosts: str | None, sudo: bool, accept_new_host_keys: bool, out_dir: str,
            deadline: float, samples: int, interval: float, no_stacks: bool, stack_dumps: int | None,
            no_probes: bool, request_log: float | None, archive: bool, as_json: bool,
            markdown_file: str | None, quiet: bool, verbose: bool, fail_on: str | None, since: Any,
            prometheus: str | None,
            history: float, with_sglang_source: bool, client_dumps: tuple[str, ...], no_redact: bool,
            keep_env: tuple[str, ...], ports: tuple[int, ...] = (), services: tuple[str, ...] = (),
            all_users: bool = False, slurm_job: str | None = None, slurm_container: str | None = None,
            slurm_ssh: bool | None = None, use_k8s: bool = False, namespace: str | None = None,
            selector: str | None = None, context: str | None = None, k8s_debug: bool = False,
            k8s_debug_image: str | None = None) -> None:
    """Capture evidence from every host at once, within a deadline, into a bundle.

    Exit codes: 0 complete, 3 partial (a host unreachable, a collector timed out or could
    not run), 6 nothing collected (no host reachable), 4 the verdict reached --fail-on,
    1 error (also: --request-log could not put a server's logging back), 2 usage or
    cluster-file error, 130 interrupted (the partial bundle is still written).
    """
    from pdforensics.capture.planner import PlanOptions
    from pdforensics.capture.request_log import check_window
    from pdforensics.capture.run import CaptureOptions, run_capture
    from pdforensics.cli.options import configured_cluster_file
    from pdforensics.k8s.options import k8s_capture

    from pdforensics.cli.options import apply_scope

    check_window(request_log, deadline)
    cluster = apply_slurm(resolve_cluster(hosts, cluster_file, local, identity, known_hosts, sudo),
                          slurm_job, slurm_container, slurm_ssh, hosts)
    from_file = not hosts and not local and configured_cluster_file(cluster_file) is not None
    cluster = apply_scope(cluster, ports, services, all_users, from_file or slurm_job is not None)
    k8s = k8s_capture(cluster, from_file, use_k8s, namespace, selector, context, k8s_debug,
                      k8s_debug_image, deadline)
    if k8s is not None:
        cluster = k8s.cluster
    options = CaptureOptions(
        out_dir=Path(out_dir), deadline_s=deadline, archive=archive, since=since,
        accept_new_host_keys=accept_new_host_keys or cluster.accept_new_host_keys,
        plan=PlanOptions(samples=samples, interval_s=interval, stacks=not no_stacks,
                         stack_dumps=stack_dumps or min(samples, 3), sglang_source=with_sglang_source,
                         probes=not no_probes, request_log_s=request_log or 0.0),
    )
    from pdforensics.analysis.client_dumps import client_dump_sidecars
    from pdforensics.prometheus.history import sidecars_for
    from pdforensics.redact.redactor import NO_REDACT_WARNING, Allowlist, NoRedactor, Redactor

    if no_redact:
        click.echo(NO_REDACT_WARNING, err=True)
    from pdforensics.capture.recover import unfinished_notice

    if (notice := unfinished_notice(Path(out_dir))) is not None:
        click.echo(notice, err=True)
    progress = _progress([h.name for h in cluster.hosts], deadline, quiet)
    threading.Thread(target=_prewarm, daemon=True, name="prewarm").start()
    try:
        outcome = run_capture(cluster, options, progress=progress, redactor=NoRedactor() if no_redact
                              else Redactor(allow=Allowlist.with_extra(keep_env)),
                              sidecars=[*sidecars_for(prometheus, history),
                                        *client_dump_sidecars(client_dumps),
                                        *([k8s.sidecar] if k8s else [])],
                              extra_manifest={"k8s": k8s.manifest} if k8s else None)
    finally:
        if progress is not None:
            progress.close()
    doc = _finished_doc(outcome, cluster, markdown_file, archive)
    doc["samples"] = samples
    if as_json:
        click.echo(json.dumps(doc, indent=1))
    elif quiet:
        click.echo(" ".join([doc["status"], doc["verdict"] or "-", doc["bundle"],
                             *([doc["archive"]] if doc.get("archive") else [])]))
    else:
        from pdforensics.cli.summary import summary_lines
        from pdforensics.terminal import print_lines

        print_lines(summary_lines(doc, verbose))
    if no_redact:
        click.echo(NO_REDACT_WARNING, err=True)
    for line in outcome.request_log_left_on:
        click.echo(f"pdforensics: error: {line}", err=True)
    sys.exit(capture_exit(doc, fail_on))


def capture_exit(doc: dict[str, Any], fail_on: str | None) -> ExitStatus:
    """6 nothing collected, else 1 when --request-log could not put a server's logging back,
    else 4 when the verdict reached --fail-on, else 3 partial, else 0."""
    if not doc["collected"]:
        return ExitStatus.NOTHING_COLLECTED
    if doc.get("request_log_left_on"):
        return ExitStatus.ERROR
    if (bad := verdict_exit(doc.get("verdict"), fail_on)) is not None:
        return bad
    return ExitStatus.OK if doc["status"] == "complete" else ExitStatus.PARTIAL


def _finished_doc(outcome: Any, cluster: Any, markdown_file: str | None = None,
                  archive: bool = True) -> dict[str, Any]:
    """finish.py's pipeline (analyze, report, archive, store), the Markdown summary when asked
    for, and the capture's JSON document."""
    from pdforensics.analysis.result_json import analysis_json
    from pdforensics.app.finish import finish_bundle
    from pdforensics.capture.run import outcome_json
    from pdforensics.store.filing import configured_store

    done = finish_bundle(outcome.bundle, store=configured_store(cluster), archive=archive)
    for warning in done.warnings:
        click.echo(f"pdforensics: warning: {warning}", err=True)
    doc = outcome_json(outcome)
    doc["archive"] = str(done.archive) if done.archive else None
    doc["collected"] = any(h.reachable for h in outcome.hosts)
    full = analysis_json(done.analysis) if done.analysis else {}
    doc["verdict"] = done.analysis.verdict if done.analysis else None
    for key in ("since", "mitigate", "diagnose", "window"):
        doc[key] = full.get(key)
    doc["findings"] = full.get("findings", [])
    doc["stuck_since"] = doc["since"]["at"] if doc["since"] else None  # the older name
    doc["report"] = str(done.report) if done.report else None
    doc["stored"] = done.filing.as_json() if done.filing else None
    if markdown_file and done.analysis is None:
        click.echo("pdforensics: warning: no analysis, so no Markdown summary", err=True)
    elif markdown_file and done.analysis is not None:
        from pdforensics.analysis.summary_md import write_markdown

        write_markdown(markdown_file, done.analysis, outcome.bundle, done.report)
    return doc


def resolve_cluster(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
                    known_hosts: str | None, sudo: bool) -> Any:
    """HOST args, --local, else the configured cluster file (-c, $PDFORENSICS_CLUSTER,
    /etc/pdforensics/cluster.toml), else this machine. A configured file that cannot be read
    is an error: never a silent capture of the local machine instead."""
    from pdforensics.cli.options import configured_cluster_file
    from pdforensics.config.cluster import hosts_from_args, load_cluster_file, local_cluster
    from pdforensics.errors import ConfigError

    if cluster_file and (hosts or local):
        raise ConfigError("give either -c FILE, HOST arguments or --local, not several")
    if hosts:
        from pdforensics.config.check import check_host_files

        check_host_files(identity, known_hosts, "--identity/--known-hosts")
        return hosts_from_args(hosts, identity, known_hosts, sudo)
    if local:
        return local_cluster()
    configured = configured_cluster_file(cluster_file)
    return load_cluster_file(configured) if configured else local_cluster()


def _progress(hosts: list[str], deadline: float, quiet: bool) -> Any:
    """A live block on a terminal, plain lines otherwise (stderr), nothing with --quiet."""
    from pdforensics.capture.progress import LiveProgress, PlainProgress

    if quiet:
        return None
    if sys.stderr.isatty():
        return LiveProgress(sys.stderr, hosts, deadline)
    return PlainProgress(sys.stderr)


def _prewarm() -> None:
    """Import the analysis and the report and compile the report's template (about 0.6 s) while
    the capture waits on its hosts, so the wall after the last result is only their work. It
    waits out the busy start first (connections, login shells, discovery, first py-spy dumps):
    there it would only take the interpreter lock from the connections that set when the
    capture can end."""
    time.sleep(PREWARM_AFTER_S)
    try:
        import pdforensics.app.finish  # noqa: F401
        from pdforensics.report.page import warm

        warm()
    except Exception:  # noqa: BLE001  # the real import after the capture says what is wrong
        pass
