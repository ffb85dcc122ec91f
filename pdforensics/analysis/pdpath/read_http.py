"""An HTTP server's handler that raised, and a client that saw its response fail.

- uvicorn logs ``ERROR:    Exception in ASGI application`` (its protocol layer, then the
  traceback) when the application raised while it handled a request: that request failed
  there (a 500, or a response cut short). It is the cause in its file; on a router (the
  gateway in front of the workers) the request stopped in dispatch.
- curl's own error line, ``curl: (N) <what>``, is the client's view of a failure upstream:
  a consequence (18: the response was cut, 52: an empty reply, 56: the connection reset,
  28: it timed out, 7: nothing listened).
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue, Side
from pdforensics.analysis.pdpath.read_python import _stamp
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with, lines_with, split_lines

_ASGI = "Exception in ASGI application"
_CURL = linear.compile(r"^curl: \((\d{1,3})\) (.{1,300})$")
#: curl's exit codes a server's failure gives its client (the rest are the client's own)
_CURL_UPSTREAM = {"7": "nothing answered on the port", "18": "the response was cut short",
                  "28": "the request timed out", "52": "the server closed without a reply",
                  "56": "the connection failed while receiving"}
_MAX = 3


@reader("http_server_client")
def http_clues(src: Source) -> Iterator[Clue]:
    """uvicorn's handler exceptions (causes) and curl's errors (consequences)."""
    for no, line in first_lines_with(src.text, (_ASGI,), _MAX):
        yield Clue(key="ASGI_EXCEPTION", label="cause", text=line.strip()[:500],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   stage="router_dispatch" if src.role == "router" else None,
                   wedge=False, strength=2,
                   why="uvicorn: the application raised while it handled a request (the "
                       "traceback after it says where): that request failed here")
    for no, line in first_lines_with(src.text, ("curl: (",), _MAX):
        m = _CURL.match(line.strip())
        if m is None or m.group(1) not in _CURL_UPSTREAM:
            continue
        yield Clue(key="CLIENT_HTTP_ERROR", label="consequence", text=line.strip()[:500],
                   source=src.path, line=no, role="client", host=src.host, wedge=False,
                   strength=1,
                   why=f"curl's error {m.group(1)}: {_CURL_UPSTREAM[m.group(1)]}; the client "
                       "saw a failure upstream of it")


#: uvicorn's shutdown sequence (uvicorn.server.Server.shutdown, then the lifespan's), in order
_SHUTDOWN = ("Shutting down", "Waiting for connections to close.", "Waiting for background tasks",
             "Waiting for application shutdown.")
_ACCESS = linear.compile(r'"(?:GET|POST|PUT|DELETE) \S{1,400} HTTP/[\d.]{1,3}" \d{3}')
_APP_STEPS = 4  # the application's own shutdown lines read after uvicorn's
_ROLE_SIDES: dict[str, Side] = {"router": "router", "prefill": "prefill", "decode": "decode"}


@reader("http_server_stopped")
def shutdown_clues(src: Source) -> Iterator[Clue]:
    """uvicorn stopping a server that was still answering requests (access lines after its
    "Shutting down"): each step of the shutdown, and the application's own steps after
    "Waiting for application shutdown.", is a consequence of whatever stopped it (a signal,
    its supervisor, a liveness probe): that is not in the log."""
    if "Shutting down" not in src.text or "Waiting for application shutdown." not in src.text:
        return
    start = next((no - 1 for no, ln in lines_with(src.text, ("Shutting down",))
                  if ln.rstrip().endswith("Shutting down")), None)  # (its index)
    lines = split_lines(src.text)
    if start is None or not any(_ACCESS.search(ln) for ln in lines[start + 1:start + 200]):
        return
    app = None
    for i in range(start, min(len(lines), start + 200)):
        line = lines[i].strip()
        ours = any(w in line for w in _SHUTDOWN)
        if app is not None and (i - app > _APP_STEPS or "shutdown complete" in line):
            break
        if not ours and app is None:
            continue
        if "Waiting for application shutdown." in line:
            app = i
        yield Clue(key="SERVER_STOPPED", label="consequence", text=line[:500], source=src.path,
                   line=i + 1, time=_stamp(line), role=src.role, host=src.host, wedge=False,
                   side=_ROLE_SIDES.get(src.role or ""),
                   strength=1,
                   why="uvicorn shutting the server down while it still answered requests: "
                       "something stopped it (a signal, its supervisor); this log does not "
                       "say what")
