"""`pdforensics watch`: notice a wedge from cheap signals and capture it while it happens."""

from __future__ import annotations

import sys

import click

from pdforensics.app.targets import Where
from pdforensics.capture.profiles import Collect
from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import DURATION, Output, collect_options, output_options, where_options


@click.command("watch")
@where_options("Watch")
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
@collect_options("watch")
@click.option("--http-timeout", default="5s", show_default=True, type=DURATION,
              help="Timeout of one GET of a poll.")
@click.option("--max-polls", type=int, help="Stop after this many polls (rehearsals, tests).")
@output_options("json", "quiet", json="One JSON object per event on stdout.")
@handles_errors
def watch(where: Where, every: float, hold: float, cooldown: float, on_capture: str | None,
          hook_timeout: float, store: str | None, metrics_port: int | None, metrics_addr: str,
          prometheus: str | None, history: float, collect: Collect, http_timeout: float,
          max_polls: int | None, out: Output) -> None:
    """Poll /metrics, router metrics and /workers; capture a wedge once it holds --for.

    Each poll is one GET per endpoint, judged by the same rules as `analyze`. One capture
    per incident: the next needs the cluster healthy again and --cooldown elapsed.
    Runs in the foreground (one status line) or as a systemd service (examples/watch/).
    """
    from pdforensics.watch.run import WatchRequest, run_watch

    request = WatchRequest(collect=collect, every_s=every, hold_s=hold, cooldown_s=cooldown,
                           http_timeout_s=http_timeout, on_capture=on_capture,
                           hook_timeout_s=hook_timeout, store=store, metrics_port=metrics_port,
                           metrics_addr=metrics_addr, prometheus=prometheus, history_s=history,
                           max_polls=max_polls)
    mode = "json" if out.as_json else "quiet" if out.quiet else ("tty" if sys.stdout.isatty() else "plain")
    code = run_watch(where, request, mode)
    if mode == "tty":
        click.echo("")
    sys.exit(code)
