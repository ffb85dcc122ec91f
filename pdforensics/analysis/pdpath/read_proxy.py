"""A request that went through an HTTP proxy and failed: urllib3's debug line (printed by
``requests`` when its logger is at DEBUG, as SGLang's is with --log-level debug) names the
connection it used and the request line it sent; an absolute URL in the request line
(``"GET http://0.0.0.0:25600/get_model_info HTTP/1.1" 403``) means the connection was to a
proxy (http_proxy / HTTPS_PROXY in the environment), so the proxy answered.

A proxied request that failed is a cause on the host side (its environment sends local
traffic through a proxy: NO_PROXY is the fix); the proxy's address is the suspect. A request to
the server's own /get_model_info or /model_info is SGLang's launcher waiting for its server
at start-up (http_server._wait_and_warmup): the stage is start-up.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import has_any, lines_with, marks
from pdforensics.parsers.logtime import parse_log_timestamp

_PROXIED = linear.compile(r'(https?)://([\w.\-\[\]:]{1,200}:\d{1,5}) "([A-Z]{3,7}) (https?://\S{1,500}) '
                          r'HTTP/\d(?:\.\d)?" (\d{3})')
_MARKS = marks(' "GET http', ' "POST http', ' "PUT http', ' "HEAD http')
_WARMUP_PATHS = ("/get_model_info", "/model_info")
_MAX = 20


@reader("proxied_requests")
def proxied_requests(src: Source) -> Iterator[Clue]:
    """Failed requests sent through an HTTP proxy (see the module docstring)."""
    if not src.text or src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _MARKS):
        return
    n = 0
    for no, line in lines_with(src.text, _MARKS):
        m = _PROXIED.search(line[:2000])
        if m is None or int(m.group(5)) < 400:
            continue
        n += 1
        if n > _MAX:
            return
        warmup = any(p in m.group(4) for p in _WARMUP_PATHS)
        yield Clue(key="PROXY_REQUEST_FAILED", label="cause", text=line.strip()[:500],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, side="host", suspect=m.group(2),
                   stage="startup" if warmup else None, wedge=False, strength=3,
                   why=f"the request for {m.group(4)} went through the proxy {m.group(2)} "
                       f"(an absolute URL in the request line), which answered {m.group(5)}: "
                       "the host's environment sends this traffic through a proxy (set NO_PROXY "
                       "for local and cluster addresses)"
                       + ("; /get_model_info is SGLang's launcher waiting for its own server "
                          "at start-up" if warmup else ""))
