"""What the watcher sees, as Prometheus metrics (prometheus-client, its own registry)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.exposition import generate_latest

VERDICTS = ("HEALTHY", "DEGRADED", "WEDGED", "UNKNOWN")
SOURCES = ("metrics", "router_metrics", "workers", "discovery", "capture", "prometheus",
           "on_capture")


class WatchMetrics:
    """The exporter's five families; labels are created up front so rates start at 0."""

    def __init__(self, cluster: str, registry: CollectorRegistry | None = None):
        self.cluster = cluster
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.wedge_suspected = Gauge(
            "pdforensics_wedge_suspected",
            "1 while the watcher sees a wedge signature on this server, else 0",
            ["cluster", "role", "host"], registry=r)
        self.last_capture = Gauge(
            "pdforensics_last_capture_timestamp_seconds",
            "Unix time the watcher's last capture finished (0: none yet)", registry=r)
        self.captures = Counter(
            "pdforensics_captures_total", "Captures the watcher took, by verdict",
            ["verdict"], registry=r)
        self.failures = Counter(
            "pdforensics_collector_failures_total",
            "Polls, discoveries, captures and hooks that failed, by source", ["source"],
            registry=r)
        self.poll_duration = Histogram(
            "pdforensics_poll_duration_seconds", "Wall time of one poll of every endpoint",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10), registry=r)
        for v in VERDICTS:
            self.captures.labels(v)
        for s in SOURCES:
            self.failures.labels(s)
        self._server: Any = None

    def set_targets(self, servers: Iterable[tuple[str, str]]) -> None:
        """Create the 0-valued wedge series of every (role, host) server."""
        for role, host in servers:
            self.wedge_suspected.labels(self.cluster, role, host)

    def suspected(self, role: str, host: str, value: bool) -> None:
        self.wedge_suspected.labels(self.cluster, role, host).set(1 if value else 0)

    def captured(self, verdict: str | None, at: float) -> None:
        self.captures.labels(verdict if verdict in VERDICTS else "UNKNOWN").inc()
        self.last_capture.set(at)

    def failed(self, source: str, n: int = 1) -> None:
        if n:
            self.failures.labels(source).inc(n)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Serve /metrics on a background thread; port 0 picks a free one (see .port)."""
        self._server, _thread = start_http_server(port, addr=addr, registry=self.registry)

    @property
    def port(self) -> int | None:
        return int(self._server.server_address[1]) if self._server is not None else None

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def text(self) -> str:
        return generate_latest(self.registry).decode()
