"""The gateway's own failures to reach a worker (smg / sglang-router) -> clues.

smg logs "Failed to connect gRPC client for worker grpc://host:port: transport error" when it
cannot open a connection to a worker, and its health checker then logs "Worker ... health
check failed: Connection failed for worker ...". The first is the cause (the worker at that
URL does not answer: the worker's side, which the URL may name, else not established); the
health-check failures that follow are its consequences (the
signature table reads them). An unreachable worker is an error returned, not a hang.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Side
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_line_matching, has_any, lines_with, marks
from pdforensics.parsers.logtime import parse_log_timestamp
from pdforensics.parsers.router_log import ANSI

_CONNECT_MARKS = marks("Failed to connect", "request to http", "request to grpc",
                       "Removing failed worker")
_CONNECT = linear.compile(r"Failed to connect (?:gRPC client |HTTP client )?(?:for|to) worker "
                          r"([a-z]{2,8}://[^\s:]{1,200}(?::\d{1,5})?)")


#: a request answered with success, as the router (smg's tracing span) or a server logs it
_SERVED = ("status_code=200", "status=200", '" 200 OK', " 200 OK")


#: the router's request to a worker failed ("Generate request to http://h:8001 failed (attempt
#: 1/3)", sglang-router 0.1-0.3), and it took the worker out ("Removing failed worker: URL")
_REQUEST_FAILED = linear.compile(r"request to ([a-z]{2,8}://[^\s:/]{1,200}(?::\d{1,5})?)\S{0,200} "
                                 r"failed", linear.I)
_REMOVING = linear.compile(r"Removing failed worker:? ([a-z]{2,8}://[^\s:/]{1,200}(?::\d{1,5})?)")


@reader("router_workers")
def worker_unreachable(src: Source) -> Iterator[Clue]:
    """One cause per worker URL the gateway could not connect to or send a request to (its
    first line); its removal of the worker that failed is a consequence."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _CONNECT_MARKS):
        return
    seen: set[str] = set()
    served = [no for no, _ in lines_with(src.text, _SERVED)]
    for no, raw in lines_with(src.text, _CONNECT_MARKS):
        line = ANSI.sub("", raw)  # smg colours its log even into a file
        gone = _REMOVING.search(line)
        if gone is not None:
            yield Clue(key="ROUTER_WORKER_REMOVED", label="consequence", text=line.strip()[:500],
                       source=src.path, line=no, time=parse_log_timestamp(line), role="router",
                       host=src.host, stage="router_dispatch", suspect=gone.group(1),
                       wedge=False, strength=1,
                       why="the router took the worker out of its pool after its requests "
                           "failed: what failed on the worker is the cause")
            continue
        m = _CONNECT.search(line)
        failed = _REQUEST_FAILED.search(line) if m is None else None
        url = m.group(1) if m is not None else (failed.group(1) if failed is not None else None)
        if url is None or url in seen:
            continue
        seen.add(url)
        side: Side = next((r for r in ("prefill", "decode") if r in url.lower()),
                          "not_established")
        if failed is not None:  # a request dispatched to it failed: the router was serving
            yield Clue(key="ROUTER_WORKER_REQUEST_FAILED", label="cause", text=line.strip()[:500],
                       source=src.path, line=no, time=parse_log_timestamp(line), role="router",
                       host=src.host, side=side, suspect=url, wedge=False, strength=2,
                       stage="router_dispatch",
                       why="the router's request to this worker failed: the worker is down, "
                           "overloaded or unreachable (its own log says which)")
            continue
        # before the router served any request it is still bringing its workers up
        starting = not served or served[0] > no
        yield Clue(key="ROUTER_WORKER_UNREACHABLE", label="cause", text=line.strip()[:500],
                   source=src.path, line=no, time=parse_log_timestamp(line), role="router",
                   host=src.host, side=side, suspect=url, wedge=False, strength=2,
                   stage="startup" if starting else None,
                   why="smg could not open a connection to this worker: it is down, not yet "
                       "listening, or unreachable from the router"
                       + (" (before it served any request: it was still adding its workers)"
                          if starting else ""))


#: the router's start line naming its workers: none given ("worker_urls: []", "prefill_urls: [],
#: decode_urls: []"), and what would bring them later (service discovery, a worker registered)
_NO_URLS = linear.compile(r"worker_urls: \[\]|prefill_urls: \[\], decode_urls: \[\]")
_NO_URLS_MARKS = marks("worker_urls: []", "prefill_urls: [], decode_urls: []")
_LATER = marks("ervice discovery", "ervice_discovery", "Activated", "Added worker",
               "Registered worker", "worker registered", "Adding worker")


@reader("router_no_workers")
def no_workers_configured(src: Source) -> Iterator[Clue]:
    """A router started with no worker and nothing that would add one later (no service
    discovery, no worker registered in its log): it has nothing to route to."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _NO_URLS_MARKS) \
            or has_any(src.text, _LATER):
        return
    for no, raw in lines_with(src.text, _NO_URLS_MARKS):
        line = ANSI.sub("", raw)
        if _NO_URLS.search(line) is not None:
            yield Clue(key="ROUTER_NO_WORKERS_GIVEN", label="cause", text=line.strip()[:500],
                       source=src.path, line=no, time=parse_log_timestamp(line), role="router",
                       host=src.host, side="router", stage="startup", wedge=False, strength=2,
                       why="the router started with an empty worker list and its log shows "
                           "no service discovery and no worker registered: it has no worker "
                           "to send a request to (its arguments lost the URLs, or they were "
                           "never given)")
            return


#: the gateway refusing a request because no worker may take it (smg's 503 body
#: ``no_available_workers``: "No available workers (all circuits open or unhealthy)"; the
#: Python router's "No available prefill workers"; a NATS-based frontend's "no responders":
#: no worker subscribed to the request's subject, Dynamo's "Failed to generate completions:
#: no responders")
_NO_WORKERS = linear.compile(r"No (?:available )?(?:(?:prefill|decode) )?workers(?: available)?"
                             r"(?: \([^)\n]{0,80}\))?|no_available_workers|: no responders\b")
#: an HTTP client reporting the error status it got (httpx: "Server error '503 Service
#: Unavailable' for url 'http://.../generate'")
_REFUSAL_MARKS = marks("No available", "No prefill", "No decode", "no_available_workers",
                       "Server error '5", ": no responders")
_CLIENT_5XX = linear.compile(r"Server error '(5\d\d) [^'\n]{0,60}' for url")


_REFUSALS_SAID = 5


@reader("router_refusals")
def router_refusals(src: Source) -> Iterator[Clue]:
    """The router had no worker to dispatch to (at router_dispatch: a consequence of the
    workers' failure), and the client's error statuses that follow from it."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _REFUSAL_MARKS):
        return
    said = 0
    served = [no for no, _ in lines_with(src.text, _SERVED)]
    for no, raw in lines_with(src.text, _REFUSAL_MARKS):
        line = ANSI.sub("", raw)  # smg colours its log even into a file
        when = parse_log_timestamp(line)
        if _NO_WORKERS.search(line) is not None and said < _REFUSALS_SAID:
            said += 1  # (the first few: the refusals that follow are the same reading)
            if served and served[-1] > no:  # requests were served after it: it passed
                yield Clue(key="ROUTER_REFUSED_NO_WORKER_PASSED", label="noise",
                           text=line.strip()[:500], source=src.path, line=no, time=when,
                           stage="router_dispatch", side="router", role="router",
                           host=src.host, wedge=False,
                           why="the router had no worker for a while (workers not yet "
                               f"registered or healthy), then served requests (line {served[-1]})")
                continue
            yield Clue(key="ROUTER_REFUSED_NO_WORKER", label="consequence",
                       text=line.strip()[:500], source=src.path, line=no, time=when,
                       stage="router_dispatch", side="router", role="router", host=src.host,
                       wedge=False, strength=1,
                       why="the router had no worker it could send the request to (every "
                           "circuit open or unhealthy, none registered, none subscribed) and "
                           "answered an error: what made the workers fail or go is the cause")
        elif _CLIENT_5XX.search(line) is not None:
            yield Clue(key="CLIENT_HTTP_5XX", label="consequence", text=line.strip()[:500],
                       source=src.path, line=no, time=when, side="client", host=src.host,
                       wedge=False, strength=1,
                       why="a client got an error status: what failed behind it is its cause")


#: an HTTP server's access line (uvicorn's, SGLang's HTTP server): the request line and the
#: status it answered ('"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
_ACCESS_5XX = linear.compile(r'"(?P<method>[A-Z]{3,7}) (?P<path>/[^\s"]{0,300}) HTTP/\d(?:\.\d)?" '
                             r'(?P<status>5\d\d)\b')
#: Gin's access line (Go servers: Ollama, gateways): "[GIN] 2025/01/12 - 01:23:05 | 500 |
#: 30m0s | 10.0.0.123 | POST "/api/chat""
_GIN_5XX = linear.compile(r'\[GIN\] [^|\n]{0,40}\| (?P<status>5\d\d) \|[^|\n]{0,40}\|[^|\n]{0,80}\| '
                          r'(?P<method>[A-Z]{3,7}) {1,10}"(?P<path>/[^"\s]{0,300})"')
_ACCESS_MARKS = marks('" 500', '" 502', '" 503', '" 504', "| 500 |", "| 502 |", "| 503 |",
                      "| 504 |")
_PROBES = ("/health", "/metrics", "/get_model_info", "/model_info", "/get_server_info")
_ACCESS_MAX = 5  # first lines per status and path: the rest only counted
#: the endpoints that generate (SGLang's own and its OpenAI-compatible ones)
_GENERATION = ("/generate", "/v1/chat/completions", "/v1/completions",
               "/api/generate", "/api/chat")  # (the last two: Ollama's)


@reader("access_errors")
def access_errors(src: Source) -> Iterator[Clue]:
    """A server's access lines that answered 5xx to requests (probes left out: a probe's 503
    while the server starts is its answer, not a failure): the server failed those requests,
    what it hit is in its own log."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _ACCESS_MARKS):
        return
    seen: dict[tuple[str, str], int] = {}
    for no, raw in lines_with(src.text, _ACCESS_MARKS):
        m = _ACCESS_5XX.search(raw[:2000]) or _GIN_5XX.search(raw[:2000])
        if m is None:
            continue
        method, path, status = m["method"], m["path"], m["status"]
        if path.startswith(_PROBES):
            continue
        key = (status, path)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > _ACCESS_MAX:
            continue
        # a generation request failed somewhere on the request path: which stage, its log says
        on_path = path.startswith(_GENERATION)
        yield Clue(key="SERVER_HTTP_5XX", label="consequence", text=raw.strip()[:500],
                   source=src.path, line=no, time=parse_log_timestamp(raw), role=src.role,
                   host=src.host, wedge=False, strength=1,
                   stage=NOT_ESTABLISHED if on_path else None,
                   why=f"the server answered {status} to {method} {path}: the request "
                       "failed there; the error it hit is its cause")


@reader("served_requests")
def served_requests(src: Source) -> Iterator[Clue]:
    """The first generation request a router or server answered with 200: it was serving
    (a failure after it is not one of start-up). Probes are left out: SGLang's launcher
    asks /get_model_info while it starts."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _SERVED_MARKS):
        return
    found = first_line_matching(src.text, _SERVED_GENERATION)
    if found is not None:
        no, line = found
        yield Clue(key="REQUEST_SERVED", label="progress", text=line.strip()[:300],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, wedge=False, strength=1,
                   why="a generation request answered with success: requests were served")


_SERVED_MARKS = marks(*_SERVED)
#: a generation endpoint and a success status on one line (uvicorn's access line, smg's span)
_SERVED_GENERATION = linear.compile(
    b"(?:" + b"|".join(linear.escape(p.encode()) for p in _GENERATION) + b")[^\n]{0,300}?"
    rb"(?:\" 200\b| 200 OK|status(?:_code)?=200\b)")
