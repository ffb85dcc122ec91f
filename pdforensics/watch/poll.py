"""One poll: a single GET per endpoint, all endpoints at once, failures kept as data."""

from __future__ import annotations

import urllib.error
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pdforensics.errors import ParseError
from pdforensics.parsers.http import HttpResponse
from pdforensics.parsers.prometheus import parse_metrics
from pdforensics.prometheus.http_get import HttpGot, http_get
from pdforensics.views.loaded import Fetch, MetricSample
from pdforensics.watch.targets import Endpoint

MAX_BYTES = 16 * 1024 * 1024
USER_AGENT = "pdforensics-watch"


@dataclass(frozen=True)
class Reading:
    """What one GET of one endpoint gave."""

    endpoint: Endpoint
    got: HttpGot

    @property
    def ok(self) -> bool:
        return self.got.ok

    @property
    def status(self) -> int | None:
        return self.got.status

    @property
    def error(self) -> str | None:
        return self.got.error

    def fetch(self, n: int) -> Fetch:
        """This reading as an analysis Fetch (key ``watch.<source>.p<n>``)."""
        g = self.got
        resp = (HttpResponse(g.status, body=g.body, headers=(("content-length", str(len(g.body))),))
                if g.status is not None else None)
        return Fetch(key=f"watch.{self.endpoint.source}.p{n}", source=self.endpoint.source,
                     url=self.endpoint.url, started_at=g.started_at, duration_s=g.duration_s,
                     timed_out="timed out" in (g.error or ""), error=g.error,
                     exit_status=0 if g.status is not None else None, response=resp)

    def sample(self, n: int) -> MetricSample:
        """This reading as an analysis MetricSample (snapshot None when unusable)."""
        fetch = self.fetch(n)
        snap = None
        if self.ok:
            try:
                snap = parse_metrics(self.got.body.decode("utf-8", "replace"))
            except ParseError:
                snap = None
        return MetricSample(fetch.key, self.got.started_at, fetch, snap)


def get(endpoint: Endpoint, timeout_s: float) -> Reading:
    """One GET; never raises."""

    def describe(exc: BaseException, body: bytes) -> str:
        if isinstance(exc, urllib.error.HTTPError):
            return f"HTTP {exc.code}"
        if isinstance(exc, TimeoutError):
            return f"timed out after {timeout_s:g}s"
        reason = getattr(exc, "reason", None) or exc
        return "timed out" if "timed out" in str(reason) else f"{reason}"

    return Reading(endpoint, http_get(endpoint.url, timeout_s, describe, max_bytes=MAX_BYTES,
                                      headers={"User-Agent": USER_AGENT}))


class Poller:
    """Polls a fixed set of endpoints concurrently; one GET each per call."""

    def __init__(self, timeout_s: float = 5.0, workers: int = 16):
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="watch-poll")

    def poll(self, endpoints: Sequence[Endpoint]) -> list[Reading]:
        futures = [self._pool.submit(get, e, self.timeout_s) for e in endpoints]
        return [f.result() for f in futures]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
