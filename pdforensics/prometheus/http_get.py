"""One GET from this machine, as evidence: Prometheus's API (api.py) and watch's polls of the
servers' endpoints (watch/poll.py). Never raises, a failure is data; the caller words its
errors (``describe``), the record is the same."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: how a caller words a failed GET: the exception, and the error body when one came back
Describe = Callable[[BaseException, bytes], str]


@dataclass(frozen=True)
class HttpGot:
    """One GET: the URL, when it started, how long it took, what came back, how it ended."""

    url: str
    started_at: float
    duration_s: float
    status: int | None
    body: bytes
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == 200


def http_get(url: str, timeout_s: float, describe: Describe, *, max_bytes: int | None = None,
             headers: Mapping[str, str] | None = None, error_body: bool = False) -> HttpGot:
    """GET ``url`` within ``timeout_s``, reading at most ``max_bytes`` (None: all); an HTTP
    error keeps its status (and its body with ``error_body``)."""
    started, t0 = time.time(), time.monotonic()
    status, body, error = None, b"", None
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            status, body = resp.status, resp.read() if max_bytes is None else resp.read(max_bytes)
    except urllib.error.HTTPError as exc:
        status = exc.code
        said = exc.read() if error_body else b""
        exc.close()
        body, error = said, describe(exc, said)
    except (OSError, ValueError) as exc:
        error = describe(exc, b"")
    return HttpGot(url, started, time.monotonic() - t0, status, body, error)
