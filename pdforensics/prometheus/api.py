"""A small client of Prometheus' HTTP API (query_range, rules); PromQL durations."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
from typing import Any

from pdforensics.prometheus.http_get import HttpGot, http_get


def prom_duration(seconds: float) -> str:
    """Seconds as a PromQL range (``[300s]``): whole seconds, at least 1."""
    return f"{max(1, int(round(seconds)))}s"


class ApiResponse(HttpGot):
    """One API call as evidence (transport/http_get.py's record), and its ``data``."""

    def data(self) -> Any:
        """The ``data`` member of a successful response, or None."""
        try:
            doc = json.loads(self.body)
        except ValueError:
            return None
        if isinstance(doc, dict) and doc.get("status") == "success":
            return doc.get("data")
        return None


def api_get(base: str, path: str, params: dict[str, str], timeout_s: float) -> ApiResponse:
    """GET ``base + path?params``; never raises: a failure is data."""
    url = base.rstrip("/") + path + ("?" + urllib.parse.urlencode(params) if params else "")

    def describe(exc: BaseException, body: bytes) -> str:
        if isinstance(exc, urllib.error.HTTPError):
            return f"HTTP {exc.code}: {_api_error(body) or exc.reason}"
        return f"cannot reach {base}: {getattr(exc, 'reason', None) or exc}"

    got = http_get(url, timeout_s, describe, error_body=True)
    return ApiResponse(got.url, got.started_at, got.duration_s, got.status, got.body, got.error)


def _api_error(body: bytes) -> str | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    return str(doc.get("error")) if isinstance(doc, dict) and doc.get("error") else None


def query_range(base: str, query: str, start: float, end: float, step_s: float,
                timeout_s: float = 10.0) -> ApiResponse:
    """``/api/v1/query_range`` for one PromQL expression."""
    return api_get(base, "/api/v1/query_range",
                   {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                    "step": prom_duration(step_s), "timeout": prom_duration(timeout_s)},
                   timeout_s + 2)
