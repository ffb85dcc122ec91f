"""Fixtures of the watch tests (the servers themselves live in watch_servers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.watch.watch_servers import CountingProxy, retry_in_use


@pytest.fixture
def proxies() -> Iterator[Callable[[int, str], CountingProxy]]:
    made: list[CountingProxy] = []

    def make(port: int, upstream: str) -> CountingProxy:
        p = retry_in_use(lambda: CountingProxy(port, upstream).start())
        made.append(p)
        return p

    try:
        yield make
    finally:
        for p in made:
            p.stop()
