"""A small client of Prometheus' HTTP API (query_range, rules) and duration parsing."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
from typing import Any

from pdforensics import linear
from pdforensics.errors import ConfigError
from pdforensics.prometheus.http_get import HttpGot, http_get

_DURATION = linear.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> float:
    """``2h``, ``90m``, ``1h30m``, ``45s`` or a plain number of seconds -> seconds."""
    s = text.strip().lower()
    try:
        value = float(s)
    except ValueError:
        pos, value = 0, 0.0
        for m in _DURATION.finditer(s):
            if m.start() != pos:
                break
            value += float(m.group(1)) * _UNIT_S[m.group(2)]
            pos = m.end()
        if pos != len(s) or not s:
            raise ConfigError(f"bad duration {text!r}: use e.g. 30s, 10m, 2h, 1h30m") from None
    if value <= 0:
        raise ConfigError(f"duration {text!r} must be > 0")
    return value


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
