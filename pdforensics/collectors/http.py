"""HTTP endpoints of servers and routers, fetched from the host itself with curl."""

from __future__ import annotations

from typing import Any

from pdforensics import linear
from pdforensics.collectors.base import (
    CHEAP,
    DISCOVERY,
    MIB,
    NORMAL,
    SLOW,
    Repeat,
    Runs,
    Source,
    Switch,
    Target,
    register,
)
from pdforensics.collectors.feeds import Feed, fetch, metric_sample
from pdforensics.model import HostSpec

HTTP_TIMEOUT_S = 5.0
# `--host` of a server comes from the host's own ps: anything else than a host name or an
# IP address (a path, `@`, `#`, a space) is not used in a URL; the server is asked locally
HOSTNAME = linear.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.\-]{0,252})|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.%A-Za-z]*")


def url_for(t: Target, port: int | None = None) -> str:
    assert t.service is not None
    addr = t.service.address if HOSTNAME.fullmatch(t.service.address) else "127.0.0.1"
    host = f"[{addr}]" if ":" in addr else addr
    return f"http://{host}:{port or t.service.port}{t.path}"


def _metrics_port(t: Target) -> bool:
    """A router's metrics are on their own port: only where one is known."""
    return t.service is not None and bool(t.service.metrics_port)


def curl(url: str, timeout_s: float) -> tuple[str, ...]:
    # --globoff: [] and {} in a URL are text, never a request range; http(s) only
    return ("curl", "-sS", "-i", "--globoff", "--proto", "=http,https", "--max-time", f"{timeout_s:g}",
            "--connect-timeout", "3", url)


def _endpoint(name: str, path: str, description: str, priority: int, parser: str | None,
              sample: str | None, timeout_s: float = HTTP_TIMEOUT_S, max_bytes: int = 4 * MIB,
              metrics_port: bool = False, **plan: Any) -> Source:
    def build(host: HostSpec, t: Target) -> tuple[str, ...]:
        assert t.service is not None
        port = t.service.metrics_port if metrics_port else None
        return curl(url_for(Target(service=t.service, path=path), port), timeout_s)

    return register(Source(
        name=name, description=description, scope="endpoint", build=build, timeout_s=timeout_s + 2,
        max_bytes=max_bytes, priority=priority, parser=parser, sample=sample,
        timeout_exits=(124, 137, 28), extension="http",
        feeds=Feed("service.metrics", metric_sample) if name.endswith("metrics")
        else Feed("service.fetches", fetch), **plan,
    ))


# samples run at top priority so their spacing holds (counter deltas need real intervals)
METRICS = _endpoint("metrics", "/metrics", "Prometheus /metrics of a server, sampled N times",
                    DISCOVERY, "http:parse_http_response", "http_metrics_response.txt",
                    max_bytes=16 * MIB, runs=Runs.PER_SERVER, repeats=Repeat.SAMPLES)
ROUTER_METRICS = _endpoint("router_metrics", "/metrics",
                           "router/gateway Prometheus metrics port, sampled N times", DISCOVERY,
                           "http:parse_http_response", "http_metrics_response.txt",
                           max_bytes=16 * MIB, metrics_port=True, runs=Runs.PER_ROUTER,
                           repeats=Repeat.SAMPLES, only=lambda host, d, t: _metrics_port(t))
HEALTH = _endpoint("health", "/health", "/health of a server or router", CHEAP,
                   "http:parse_http_response", "http_health_response.txt", runs=Runs.PER_SERVICE)
GET_MODEL_INFO = _endpoint("get_model_info", "/get_model_info", "/get_model_info (old name)",
                           NORMAL, "http:parse_http_response", "http_health_response.txt",
                           runs=Runs.FOLLOW_UP)
MODEL_INFO = _endpoint("model_info", "/model_info", "/model_info (answered without the scheduler)",
                       NORMAL, "http:parse_http_response", "http_health_response.txt",
                       runs=Runs.PER_SERVER, fallback=GET_MODEL_INFO)
LOADS = _endpoint("loads", "/v1/loads?include=all", "/v1/loads with disagg queue counts",
                  NORMAL, "http:parse_http_response", "http_health_response.txt",
                  runs=Runs.PER_SERVER, config=True)  # its version, when /server_info hangs
WORKERS = _endpoint("workers", "/workers", "router /workers: registered workers and health",
                    CHEAP, "http:parse_http_response", "http_health_response.txt",
                    runs=Runs.PER_ROUTER)
GET_LOADS = _endpoint("get_loads", "/get_loads", "router /get_loads: each worker's engine load",
                      NORMAL, "http:parse_http_response", "smg_get_loads.http", runs=Runs.PER_ROUTER)
# /server_info asks the scheduler with no timeout: on a wedged server it hangs, a signal.
GET_SERVER_INFO = _endpoint("get_server_info", "/get_server_info", "/get_server_info (old name)",
                            SLOW, "http:parse_http_response", "http_health_response.txt",
                            timeout_s=8, runs=Runs.FOLLOW_UP, config=True)
SERVER_INFO = _endpoint("server_info", "/server_info",
                        "/server_info: all server args, version, internal states (asks the "
                        "scheduler; hangs when it is wedged)", SLOW, "http:parse_http_response",
                        "http_health_response.txt", timeout_s=8, runs=Runs.PER_SERVER,
                        fallback=GET_SERVER_INFO, config=True)
# /ready answers at once, without the scheduler: 503 while SGLang itself says the server should
# get no new requests (generation paused by POST /pause_generation, a failed health check,
# starting or shutting down). A server older than the endpoint answers 404.
READY = _endpoint("ready", "/ready", "/ready: whether SGLang lets the server take new requests",
                  CHEAP, "http:parse_http_response", "http_health_response.txt", runs=Runs.PER_SERVER)
# /health_generate pushes one 1-token request through the scheduler (in PD mode with a fake
# bootstrap): "/health answers, /health_generate hangs" is direct evidence of a stuck scheduler.
# SGLang answers after >= 1 s (it polls each second), so a short timeout still sees a 200.
PROBE_TIMEOUT_S = 5.0
HEALTH_GENERATE = _endpoint("health_generate", "/health_generate",
                            "/health_generate probe: one tiny generation through the scheduler "
                            "(hangs when it is stuck; --no-probes skips it)", SLOW,
                            "http:parse_http_response", "http_health_response.txt",
                            timeout_s=PROBE_TIMEOUT_S, runs=Runs.PER_SERVER, switch=Switch.PROBES)
