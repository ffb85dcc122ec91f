"""Real servers for the watch tests: a counting HTTP proxy and a real Prometheus."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pdforensics.errors import PdforensicsError

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "examples" / "prometheus" / "pdforensics-alerts.yml"


def retry_in_use(fn: Callable[[], T], tries: int = 15, wait_s: float = 1.0) -> T:
    """Ports 49000-49999 lie in Linux's ephemeral range: a client socket of any process can
    hold one of ours for a moment. Retry a start that failed on "in use"."""
    for i in range(tries):
        try:
            return fn()
        except (OSError, PdforensicsError) as exc:
            if "in use" not in str(exc) or i == tries - 1:
                raise
            time.sleep(wait_s)
    raise AssertionError("unreachable")


class CountingProxy:
    """Forwards GETs to one upstream and counts them by path: what a poll costs the server."""

    def __init__(self, port: int, upstream: str):
        self.port = port
        self.upstream = upstream.rstrip("/")
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> CountingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                with proxy._lock:
                    proxy.counts[urllib.parse.urlsplit(self.path).path] += 1
                try:
                    with urllib.request.urlopen(proxy.upstream + self.path, timeout=5) as r:
                        code, body, ctype = r.status, r.read(), r.headers.get("content-type", "")
                except OSError as exc:
                    code, body, ctype = 502, str(exc).encode(), "text/plain"
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)


class Prometheus:
    """/usr/bin/prometheus on a loopback port with a generated config and a tmp TSDB."""

    def __init__(self, root: Path, port: int, jobs: dict[str, list[str]], rule_files: list[Path]):
        self.root = root
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}
                               for job, targets in jobs.items()],
        }
        self.config = root / "prometheus.yml"
        self.config.write_text(json.dumps(config, indent=1))  # JSON is YAML
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> Prometheus:
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        if not Path(binary).exists():
            pytest.fail("prometheus is missing: run scripts/setup.sh --test (Debian package prometheus)")
        log = (self.root / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={self.config}", f"--storage.tsdb.path={self.root / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                tail = (self.root / "prometheus.log").read_text()[-2000:]
                if "address already in use" in tail.lower():
                    raise OSError(f"prometheus: port {self.port} in use")
                pytest.fail(f"prometheus exited: {log}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail("prometheus not ready in time")

    def api(self, path: str, **params: str) -> Any:
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.loads(r.read())
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[tuple[dict[str, str], float]]:
        data = self.api("/api/v1/query", query=expr)
        return [(row["metric"], float(row["value"][1])) for row in data["result"]]

    def rule(self, name: str) -> dict[str, Any] | None:
        for group in self.api("/api/v1/rules")["groups"]:
            for r in group["rules"]:
                if r["name"] == name:
                    return dict(r)
        return None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
