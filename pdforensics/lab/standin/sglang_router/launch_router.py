"""`python -m sglang_router.launch_router`: the lab's stand-in PD router / gateway."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

JSON = "application/json"
PROM = "text/plain; version=0.0.4; charset=utf-8"

# every smg_* name this router exports: (name, type, help)
ROUTER_METRICS = (
    ("smg_http_requests_total", "counter", "Total HTTP requests by path/method"),
    ("smg_http_responses_total", "counter", "Responses by status code"),
    ("smg_http_connections_active", "gauge", "Active HTTP connections"),
    ("smg_router_requests_total", "counter", "Total router requests by model and route"),
    ("smg_router_request_errors_total", "counter", "Router request errors by model and type"),
    ("smg_worker_health", "gauge", "Worker health (1 healthy, 0 unhealthy)"),
    ("smg_worker_requests_active", "gauge", "In-flight requests per worker"),
)


class Router:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.workers = []
        for url, boot in args.prefill:
            self.workers.append(
                {
                    "url": url,
                    "worker_type": "prefill",
                    "role": "prefill",
                    "bootstrap_port": boot,
                    "healthy": False,
                    "is_healthy": False,
                    "model_id": "deepseek-v3",
                    "load": 0,
                }
            )
        for url in args.decode:
            self.workers.append(
                {
                    "url": url,
                    "worker_type": "decode",
                    "role": "decode",
                    "healthy": False,
                    "is_healthy": False,
                    "model_id": "deepseek-v3",
                    "load": 0,
                }
            )
        self.lock = threading.Lock()
        self.started = time.time()
        self.requests = 0
        self.active = 0

    def health_loop(self) -> None:
        while True:
            for w in self.workers:
                ok = False
                try:
                    with urllib.request.urlopen(w["url"] + "/health", timeout=2) as r:
                        ok = r.status == 200
                except OSError:
                    ok = False
                w["healthy"] = w["is_healthy"] = ok
            time.sleep(2.0)

    def worker_metrics(self) -> str:
        """Re-export engine metrics (`sglang:X` becomes `sglang_X`), as the gateway does."""
        out = []
        for w in self.workers:
            try:
                with urllib.request.urlopen(w["url"] + "/metrics", timeout=1) as r:
                    text = r.read().decode()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("# HELP") or line.startswith("# TYPE"):
                    continue
                if line.startswith("sglang:"):
                    name_end = line.find("{")
                    labels = f'worker="{w["url"]}",'
                    out.append("sglang_" + line[7 : name_end + 1] + labels + line[name_end + 1 :])
        return "\n".join(out)

    def metrics(self) -> str:
        with self.lock:
            self.requests += 1
            n = self.requests
        lines = []
        values = {
            "smg_http_requests_total": [
                ({"method": "GET", "path": "/metrics"}, n),
                ({"method": "POST", "path": "/generate"}, 1042 + int(time.time() - self.started)),
            ],
            "smg_http_responses_total": [({"status": "200"}, 1042 + n)],
            "smg_http_connections_active": [({}, 1)],
            "smg_router_requests_total": [({"model": "deepseek-v3", "route": "/generate"}, 1042)],
            "smg_router_request_errors_total": [({"model": "deepseek-v3", "error_type": "timeout"}, 0)],
            "smg_worker_health": [
                ({"worker": w["url"], "worker_type": w["worker_type"]}, int(w["healthy"])) for w in self.workers
            ],
            "smg_worker_requests_active": [({"worker": w["url"]}, 0) for w in self.workers],
        }
        for name, mtype, help_text in ROUTER_METRICS:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {mtype}")
            for labels, value in values[name]:
                lab = ",".join(f'{k}="{v}"' for k, v in labels.items())
                lines.append(f"{name}{{{lab}}} {value}" if lab else f"{name} {value}")
        engine = self.worker_metrics()
        return "\n".join(lines) + "\n" + (engine + "\n" if engine else "")


def make_handler(router: Router, metrics_only: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *a: object) -> None:
            return

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if metrics_only:
                if path == "/metrics":
                    self._send(200, router.metrics().encode(), PROM)
                else:
                    self._send(404, b"", "text/plain")
            elif path in ("/health", "/liveness", "/readiness"):
                self._send(200, b"OK", "text/plain; charset=utf-8")
            elif path == "/workers":
                body = {
                    "workers": router.workers,
                    "total": len(router.workers),
                    "stats": {
                        "prefill_count": sum(w["role"] == "prefill" for w in router.workers),
                        "decode_count": sum(w["role"] == "decode" for w in router.workers),
                        "regular_count": 0,
                    },
                }
                self._send(200, json.dumps(body).encode(), JSON)
            elif path == "/v1/models":
                body = {"object": "list", "data": [{"id": "deepseek-v3", "object": "model", "owned_by": "sglang"}]}
                self._send(200, json.dumps(body).encode(), JSON)
            else:
                self._send(404, b'{"error":"not found"}', JSON)

    return Handler


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sglang_router.launch_router")
    p.add_argument("--pd-disaggregation", action="store_true")
    p.add_argument("--prefill", nargs="+", action="append", default=[])
    p.add_argument("--decode", action="append", default=[])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--prometheus-port", type=int, default=29000)
    p.add_argument("--prometheus-host", default=None)
    p.add_argument("--policy", default="cache_aware")
    args, _ = p.parse_known_args(argv)
    args.prefill = [(v[0], int(v[1]) if len(v) > 1 else None) for v in args.prefill]
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    router = Router(args)
    threading.Thread(target=router.health_loop, name="health_checker", daemon=True).start()
    prom = ThreadingHTTPServer((args.prometheus_host or args.host, args.prometheus_port), make_handler(router, True))
    prom.daemon_threads = True
    threading.Thread(target=prom.serve_forever, name="prometheus", daemon=True).start()
    httpd = ThreadingHTTPServer((args.host, args.port), make_handler(router, False))
    httpd.daemon_threads = True
    sys.stderr.write(f"Starting router on {args.host}:{args.port} | mode: PD | policy: {args.policy}\n")
    sys.stderr.flush()
    from pdfx_lab_runtime import log_planted

    log_planted("")
    httpd.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
