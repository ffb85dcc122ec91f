"""`pdforensics watch`: notice a wedge from cheap signals and capture it while it happens."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import DURATION, cluster_help, quiet_option
from pdforensics.errors import PdforensicsError


def _store_dir(cluster: Any, explicit: str | None) -> Path:
    """--store, else $PDFORENSICS_STORE or the cluster file's store, else the default one."""
    from pdforensics.store.filing import configured_store
    from pdforensics.store.paths import default_store, store_for

    if explicit:
        return store_for(cluster, explicit)
    return configured_store(cluster) or default_store()


@click.command("watch")
@click.argument("hosts", nargs=-1)
@click.option("-c", "--cluster", "cluster_file", type=click.Path(dir_okay=False),
              help=cluster_help())
@click.option("--local", is_flag=True, help="Watch this machine (the default with no hosts).")
@click.option("-i", "--identity", type=click.Path(dir_okay=False), help="SSH key for HOST args.")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts for HOST args.")
@click.option("--sudo", is_flag=True, help="Privileged collectors through `sudo -n` (HOST args).")
@click.option("--accept-new-host-keys", is_flag=True, help="Trust unknown host keys (never changed ones).")
@click.option("--every", default="10s", show_default=True, type=DURATION, help="Seconds between polls.")
@click.option("--for", "hold", default="60s", show_default=True, type=DURATION,
              help="How long a wedge signature must hold before capturing.")
@click.option("--cooldown", default="15m", show_default=True, type=DURATION,
              help="Least time between two captures.")
@click.option("--on-capture", help="Command run after each capture; PDFX_BUNDLE, PDFX_VERDICT, "
              "PDFX_STATUS, PDFX_SUMMARY, PDFX_TRIGGER, PDFX_CLUSTER in its environment.")
@click.option("--hook-timeout", default="60s", show_default=True, type=DURATION,
              help="Kill the --on-capture command after this long.")
@click.option("--store", "store", type=click.Path(file_okay=False),
              help="Store that files the captures [$PDFORENSICS_STORE, the cluster file's "
              "store, else the user data dir].")
@click.option("--metrics-port", type=int, help="Serve the watcher's own Prometheus metrics here.")
@click.option("--metrics-addr", default="127.0.0.1", show_default=True,
              help="Address for --metrics-port (loopback: the series name the cluster and its hosts; "
              "give 0.0.0.0 to let a Prometheus elsewhere scrape it).")
@click.option("--prometheus", "prometheus", help="Prometheus URL: captures store its history of the PD series.")
@click.option("--history", default="2h", show_default=True, type=DURATION,
              help="Window of Prometheus history stored with each capture.")
@click.option("--deadline", default="60s", show_default=True, type=DURATION,
              help="How long one capture may take.")
@click.option("--samples", default=3, show_default=True, help="/metrics samples per server in a capture.")
@click.option("--interval", default="2s", show_default=True, type=DURATION,
              help="Time between those samples.")
@click.option("--no-stacks", is_flag=True, help="Captures skip py-spy dumps.")
@click.option("--no-probes", is_flag=True, help="Captures skip the /health_generate probe.")
@click.option("--http-timeout", default="5s", show_default=True, type=DURATION,
              help="Timeout of one GET of a poll.")
@click.option("--max-polls", type=int, help="Stop after this many polls (rehearsals, tests).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event on stdout.")
@quiet_option
def watch(**kw: Any) -> None:
    """Poll /metrics, router metrics and /workers; capture a wedge once it holds --for.

    Each poll is one GET per endpoint, judged by the same rules as `analyze`. One capture
    per incident: the next needs the cluster healthy again and --cooldown elapsed.
    Runs in the foreground (one status line) or as a systemd service (examples/watch/).
    """
    handles_errors(_watch)(**kw)


def _watch(hosts: tuple[str, ...], cluster_file: str | None, local: bool, identity: str | None,
           known_hosts: str | None, sudo: bool, accept_new_host_keys: bool, every: float,
           hold: float, cooldown: float, on_capture: str | None, hook_timeout: float,
           store: str | None, metrics_port: int | None, metrics_addr: str, prometheus: str | None,
           history: float, deadline: float, samples: int, interval: float, no_stacks: bool,
           no_probes: bool, http_timeout: float, max_polls: int | None, as_json: bool, quiet: bool) -> None:
    from pdforensics.capture.planner import PlanOptions
    from pdforensics.capture.run import CaptureOptions
    from pdforensics.cli.capture import resolve_cluster
    from pdforensics.watch.exporter import WatchMetrics
    from pdforensics.watch.hook import hook_argv
    from pdforensics.watch.loop import Watcher, WatchOptions
    from pdforensics.watch.status import Reporter

    cluster = resolve_cluster(hosts, cluster_file, local, identity, known_hosts, sudo)
    store_dir = _store_dir(cluster, store)
    options = WatchOptions(
        capture=CaptureOptions(out_dir=store_dir / "bundles", deadline_s=deadline,
                               accept_new_host_keys=accept_new_host_keys or cluster.accept_new_host_keys,
                               plan=PlanOptions(samples=samples, interval_s=interval,
                                                stacks=not no_stacks, probes=not no_probes)),
        every_s=every, hold_s=hold, cooldown_s=cooldown, http_timeout_s=http_timeout,
        on_capture=hook_argv(on_capture) if on_capture else None, hook_timeout_s=hook_timeout,
        store=store_dir, prometheus=prometheus, history_s=history, max_polls=max_polls)
    metrics = WatchMetrics(cluster.name)
    if metrics_port is not None:
        try:
            metrics.serve(metrics_port, metrics_addr)
        except OSError as exc:
            raise PdforensicsError(f"cannot serve metrics on {metrics_addr}:{metrics_port}: "
                                   f"{exc.strerror or exc}") from None
    mode = "json" if as_json else "quiet" if quiet else ("tty" if sys.stdout.isatty() else "plain")
    reporter = Reporter(cluster.name, mode)
    watcher = Watcher(cluster, options, reporter, metrics)
    reporter("watching", {"cluster": cluster.name, "targets": len(watcher.windows),
                          "undiscovered": [h.name for h in watcher.undiscovered],
                          "every_s": every, "for_s": hold, "store": str(store_dir),
                          "metrics_port": metrics.port})
    try:
        code = watcher.run()
    finally:
        metrics.close()
    if mode == "tty":
        click.echo("")
    sys.exit(code)
