"""`watch` as the command runs it: the watcher over the resolved targets, its captures
(the watch profile) filed into the store, its own metrics served when asked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdforensics.app.targets import Where, resolve
from pdforensics.capture.profiles import PROFILES, Collect
from pdforensics.errors import PdforensicsError
from pdforensics.model import ClusterSpec


@dataclass(frozen=True)
class WatchRequest:
    """What `watch` was asked for beyond the targets."""

    collect: Collect  # each capture's options (the watch profile, as the flags changed it)
    every_s: float = 10.0
    hold_s: float = 60.0
    cooldown_s: float = 900.0
    http_timeout_s: float = 5.0
    on_capture: str | None = None  # the hook's command line
    hook_timeout_s: float = 60.0
    store: str | None = None  # --store
    metrics_port: int | None = None
    metrics_addr: str = "0.0.0.0"
    prometheus: str | None = None
    history_s: float = 7200.0
    max_polls: int | None = None


def store_dir(cluster: ClusterSpec, explicit: str | None) -> Path:
    """--store, else $PDFORENSICS_STORE or the cluster file's store, else the default one."""
    from pdforensics.store.filing import configured_store
    from pdforensics.store.paths import default_store, store_for

    if explicit:
        return store_for(cluster, explicit)
    return configured_store(cluster) or default_store()


def run_watch(where: Where, request: WatchRequest, mode: str) -> int:
    """Watch until stopped or --max-polls; the exit status (0, or 128 + a signal that cut a
    capture short). ``mode``: the Reporter's (tty, plain, quiet, json)."""
    from pdforensics.watch.exporter import WatchMetrics
    from pdforensics.watch.hook import hook_argv
    from pdforensics.watch.loop import Watcher, WatchOptions
    from pdforensics.watch.status import Reporter

    targets = resolve(where, request.collect.deadline_s, pods=False)
    cluster = targets.cluster
    store = store_dir(cluster, request.store)
    r = request
    options = WatchOptions(
        capture=PROFILES["watch"].options(store / "bundles", r.collect,
                                          accept_new_host_keys=targets.accept_new_host_keys),
        every_s=r.every_s, hold_s=r.hold_s, cooldown_s=r.cooldown_s, http_timeout_s=r.http_timeout_s,
        on_capture=hook_argv(r.on_capture) if r.on_capture else None, hook_timeout_s=r.hook_timeout_s,
        store=store, prometheus=r.prometheus, history_s=r.history_s, max_polls=r.max_polls)
    metrics = WatchMetrics(cluster.name)
    if r.metrics_port is not None:
        try:
            metrics.serve(r.metrics_port, r.metrics_addr)
        except OSError as exc:
            raise PdforensicsError(f"cannot serve metrics on {r.metrics_addr}:{r.metrics_port}: "
                                   f"{exc.strerror or exc}") from None
    reporter = Reporter(cluster.name, mode)
    watcher = Watcher(cluster, options, reporter, metrics)
    reporter("watching", {"cluster": cluster.name, "targets": len(watcher.windows),
                          "undiscovered": [h.name for h in watcher.undiscovered],
                          "every_s": r.every_s, "for_s": r.hold_s, "store": str(store),
                          "metrics_port": metrics.port})
    try:
        return watcher.run()
    finally:
        metrics.close()
