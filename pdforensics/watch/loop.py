"""The watch loop: poll, judge, hold, capture once per incident, run the hook."""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from pdforensics.app.finish import finish_bundle
from pdforensics.capture.run import CaptureOptions, Sidecar, run_capture
from pdforensics.collectors.http import WORKERS
from pdforensics.errors import ExitStatus, Interrupted, PdforensicsError
from pdforensics.model import ClusterSpec
from pdforensics.views.loaded import MetricSample, ServiceView
from pdforensics.watch.exporter import WatchMetrics
from pdforensics.watch.hook import run_hook
from pdforensics.watch.incident import Decision, IncidentTracker
from pdforensics.watch.poll import Poller, Reading
from pdforensics.watch.signature import WINDOW, Suspicion, judge, service_view
from pdforensics.watch.targets import WatchTarget, cluster_targets, discover_targets

Emit = Callable[[str, dict[str, Any]], None]  # (event, fields)


@dataclass(frozen=True)
class WatchOptions:
    capture: CaptureOptions  # out_dir: where bundles are written (the store's bundles/)
    every_s: float = 10.0
    hold_s: float = 60.0
    cooldown_s: float = 900.0
    rearm_s: float | None = None  # healthy this long closes an incident (default hold_s)
    http_timeout_s: float = 5.0
    on_capture: tuple[str, ...] | None = None
    hook_timeout_s: float = 60.0
    store: Path | None = None  # file captures into this store's index
    prometheus: str | None = None
    history_s: float = 7200.0
    max_polls: int | None = None
    rediscover_s: float = 60.0
    markdown_file: str | None = None  # --markdown: each capture's summary written here
    sidecars: tuple[Sidecar, ...] = ()  # what capturing pods adds (their objects and events)
    extra_manifest: dict[str, Any] | None = None


@dataclass(frozen=True)
class CaptureRecord:
    bundle: str
    status: str
    verdict: str | None
    at: float
    trigger: tuple[str, ...]
    filed: str | None
    hook: dict[str, Any] | None


@dataclass
class _Window:
    target: WatchTarget
    samples: deque[MetricSample] = field(default_factory=lambda: deque(maxlen=WINDOW))
    workers: Any = None
    last_error: str | None = None


class Watcher:
    """Runs in the calling (main) thread until stop(), SIGTERM/SIGINT or max_polls."""

    def __init__(self, cluster: ClusterSpec, options: WatchOptions, emit: Emit,
                 metrics: WatchMetrics | None = None):
        self.cluster = cluster
        self.options = options
        self.emit = emit
        self.metrics = metrics or WatchMetrics(cluster.name)
        targets, self.undiscovered = cluster_targets(cluster)
        self.windows: dict[str, _Window] = {}
        self._add_targets(targets)
        self.tracker = IncidentTracker(options.hold_s, options.cooldown_s,
                                       options.rearm_s if options.rearm_s is not None
                                       else options.hold_s)
        self.poller = Poller(options.http_timeout_s)
        self.polls = 0
        self.captures: list[CaptureRecord] = []
        self.suspicions: dict[str, Suspicion | None] = {}
        self.last_decision: Decision | None = None
        self._stop = threading.Event()
        self._next_discovery = 0.0
        self.interrupted: int | None = None  # a signal that cut a capture short
        self.capturing = False

    # -- targets --------------------------------------------------------------------------
    def _add_targets(self, targets: list[WatchTarget]) -> None:
        for t in targets:
            self.windows.setdefault(t.key, _Window(t))
        self.metrics.set_targets((w.target.role, w.target.host) for w in self.windows.values()
                                 if w.target.kind == "server")

    def _discover(self, now: float) -> None:
        if not self.undiscovered or now < self._next_discovery:
            return
        self._next_discovery = now + self.options.rediscover_s
        left = []
        for host in self.undiscovered:
            try:
                found = discover_targets(host, self.options.capture.accept_new_host_keys,
                                         self.options.capture.connect_timeout_s)
            except PdforensicsError as exc:
                left.append(host)
                self.metrics.failed("discovery")
                self.emit("discovery_failed", {"host": host.name, "error": str(exc)})
                continue
            if not found:
                left.append(host)
                self.emit("discovery_empty", {"host": host.name})
                continue
            self._add_targets(found)
            self.emit("discovered", {"host": host.name, "targets": [t.key for t in found]})
        self.undiscovered = left

    # -- one poll -------------------------------------------------------------------------
    def poll_once(self) -> Decision:
        self._discover(time.time())
        endpoints = [e for w in self.windows.values() for e in w.target.endpoints()]
        t0 = time.monotonic()
        readings = self.poller.poll(endpoints)
        duration = time.monotonic() - t0
        self.polls += 1
        self.metrics.poll_duration.observe(duration)
        for r in readings:
            self._take(r)
        routers = [self._view(w) for w in self.windows.values() if w.target.kind == "router"]
        self.suspicions = {}
        judged = True
        for w in self.windows.values():
            if w.target.kind != "server":
                continue
            if len(w.samples) < WINDOW:
                judged = False
            s = judge(self.cluster.name, self._view(w), routers)
            self.suspicions[w.target.key] = s
            self.metrics.suspected(w.target.role, w.target.host, s is not None)
        decision = self.tracker.observe(time.time(), self.suspicions,
                                        judged and not self.undiscovered)
        self.last_decision = decision
        failed = [r for r in readings if not r.ok]
        self.emit("poll", {
            "poll": self.polls, "endpoints": len(readings), "failed": len(failed),
            "duration_s": round(duration, 4), "state": decision.state, "note": decision.note,
            "suspected": {k: {"keys": list(s.keys), "held_s": round(dict(decision.held).get(k, 0.0), 1)}
                          for k, s in self.suspicions.items() if s is not None},
            "errors": [f"{r.endpoint.target} {r.endpoint.source}: {r.error or r.status}"
                       for r in failed],
        })
        if decision.capture:
            self._capture(decision)
        return decision

    def _take(self, r: Reading) -> None:
        w = self.windows[r.endpoint.target]
        if not r.ok:
            self.metrics.failed(r.endpoint.source)
        if r.endpoint.source == WORKERS.name:
            w.workers = r.fetch(self.polls)
            return
        sample = r.sample(self.polls)
        if sample.snapshot is None or not len(sample.snapshot):
            w.samples.clear()  # judge only consecutive good polls
            w.last_error = r.error or f"status {r.status}"
            return
        w.samples.append(sample)
        w.last_error = None

    def _view(self, w: _Window) -> ServiceView:
        fetches = {WORKERS.name: w.workers} if w.workers is not None else {}
        return service_view(w.target, list(w.samples), fetches)

    # -- capture --------------------------------------------------------------------------
    def _capture(self, decision: Decision) -> None:
        o = self.options
        suspects = [(k, s) for k, s in self.suspicions.items() if s is not None]
        trigger = tuple(dict.fromkeys(key for _k, s in suspects for key in s.keys))
        self.emit("capture_start", {"targets": [k for k, _s in suspects], "trigger": list(trigger),
                                    "held_s": round(decision.held[0][1], 1) if decision.held else 0})
        sidecars: list[Sidecar] = list(o.sidecars)
        if o.prometheus:
            from pdforensics.prometheus.history import history_sidecar

            sidecars.append(history_sidecar(o.prometheus, o.history_s))
        extra = {"trigger": {"by": "pdforensics watch", "keys": list(trigger),
                             "targets": {k: list(s.titles) for k, s in suspects},
                             "held_s": {k: round(v, 1) for k, v in decision.held},
                             "hold_s": o.hold_s, "every_s": o.every_s}, **(o.extra_manifest or {})}
        self.capturing = True
        try:
            outcome = run_capture(self.cluster, o.capture, extra_manifest=extra, sidecars=sidecars)
        except Interrupted as exc:
            self.interrupted = exc.signum
            self._stop.set()
            self.emit("capture_interrupted", {"bundle": exc.bundle})
            return
        except PdforensicsError as exc:
            self.metrics.failed("capture")
            self.emit("capture_failed", {"error": str(exc)})
            return
        finally:
            self.capturing = False
        done = finish_bundle(outcome.bundle, store=o.store, origin="watch", archive=o.capture.archive)
        verdict = done.analysis.verdict if done.analysis is not None else None
        summary = done.analysis.summary if done.analysis is not None else "; ".join(done.warnings)
        if o.prometheus:
            from pdforensics.prometheus.history import SERIES, load_history

            hist = load_history(outcome.bundle)
            self.metrics.failed("prometheus", len(SERIES) if hist is None else
                                sum(1 for s in hist.series if s.error))
        filed = None
        if done.filing is not None and done.filing.snapshot is not None:
            filed = str(done.filing.snapshot.path)
        elif done.filing is not None:
            self.metrics.failed("capture")
            self.emit("file_failed", {"bundle": str(outcome.bundle), "error": done.filing.error})
        markdown = ""
        if o.markdown_file and done.analysis is not None:
            from pdforensics.analysis.summary_md import write_markdown

            write_markdown(o.markdown_file, done.analysis, outcome.bundle, done.report)
            markdown = o.markdown_file
        at = time.time()
        self.metrics.captured(verdict, at)
        hook = None
        if o.on_capture:
            a = done.analysis
            info = {"bundle": str(outcome.bundle), "verdict": verdict or "UNKNOWN",
                    "status": outcome.status, "cluster": self.cluster.name,
                    "summary": summary, "trigger": ",".join(trigger),
                    "suspects": ",".join(k for k, _s in suspects),
                    "archive": str(done.archive) if done.archive else "",
                    "since": _iso(a.since.at) if a is not None and a.since is not None else "",
                    "mitigate": (a.mitigate or "") if a is not None else "",
                    "report": str(done.report) if done.report else "", "markdown": markdown}
            res = run_hook(o.on_capture, info, o.hook_timeout_s)
            if not res.ok:
                self.metrics.failed("on_capture")
            hook = {"exit_status": res.exit_status, "error": res.error,
                    "duration_s": round(res.duration_s, 3), "output": res.output}
        rec = CaptureRecord(str(outcome.bundle), outcome.status, verdict, at, trigger, filed, hook)
        self.captures.append(rec)
        self.emit("captured", dataclasses.asdict(rec) | {"summary": summary})

    # -- running --------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def run(self) -> int:
        """Poll every `every_s` until stopped; 0, or 130/143 when a signal cut a capture."""
        with _stop_on_signals(self):
            while not self._stop.is_set():
                started = time.monotonic()
                self.poll_once()
                if self.options.max_polls is not None and self.polls >= self.options.max_polls:
                    break
                self._stop.wait(max(0.0, self.options.every_s - (time.monotonic() - started)))
        self.poller.close()
        if self.interrupted is not None:
            return ExitStatus.for_signal(self.interrupted)
        return ExitStatus.OK


class _stop_on_signals:
    """SIGTERM/SIGINT end the loop after the current poll (main thread only); during a
    capture SIGINT interrupts it as Ctrl-C does `capture` (the partial bundle is kept)."""

    def __init__(self, watcher: Watcher):
        self.watcher = watcher
        self.old: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.old[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.watcher.stop()
        if self.watcher.capturing and signum == signal.SIGINT:
            raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.old.items():
            signal.signal(sig, old)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
