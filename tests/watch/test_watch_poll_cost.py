"""Against the lab: one GET per endpoint per poll; a server vanishing and coming back;
discovery of undeclared services."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pdforensics.capture.run import CaptureOptions
from pdforensics.lab import lab_down, lab_up
from pdforensics.lab.core import LabInfo
from pdforensics.model import ClusterSpec, HostSpec, ServiceSpec
from pdforensics.watch.loop import Watcher, WatchOptions
from pdforensics.watch.targets import discover_targets
from tests.support import ports
from tests.watch.watch_servers import retry_in_use

pytestmark = pytest.mark.lab

BASE = ports.block()  # lab: prefill BASE, decode BASE+1, router BASE+3, router metrics BASE+4
_PROXY0 = ports.block()
PROXY = {"prefill": _PROXY0, "decode": _PROXY0 + 1, "router": _PROXY0 + 3, "router_metrics": _PROXY0 + 4}
DECODE_KEY = f"decode-0 decode:{PROXY['decode']}"  # the watcher's window of the proxied decode


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabInfo]:
    d = tmp_path_factory.mktemp("watchlab")
    try:
        yield retry_in_use(lambda: lab_up(d / "lab", fault="healthy", ssh=False, base_port=BASE))
    finally:
        lab_down(d / "lab")


@pytest.fixture
def proxied(lab: LabInfo, proxies: Callable[[int, str], Any]) -> dict[str, Any]:
    up = "http://127.0.0.1:{}"
    return {"prefill": proxies(PROXY["prefill"], up.format(BASE)),
            "decode": proxies(PROXY["decode"], up.format(BASE + 1)),
            "router": proxies(PROXY["router"], up.format(BASE + 3)),
            "router_metrics": proxies(PROXY["router_metrics"], up.format(BASE + 4))}


def proxy_cluster() -> ClusterSpec:
    return ClusterSpec("lab", (
        HostSpec("router-0", "local", services=(ServiceSpec("router", PROXY["router"],
                                                            metrics_port=PROXY["router_metrics"]),)),
        HostSpec("prefill-0", "local", services=(ServiceSpec("prefill", PROXY["prefill"]),)),
        HostSpec("decode-0", "local", services=(ServiceSpec("decode", PROXY["decode"]),)),
    ))


def watcher(tmp_path: Path, events: list[tuple[str, dict[str, Any]]]) -> Watcher:
    opts = WatchOptions(capture=CaptureOptions(out_dir=tmp_path / "bundles"), every_s=0.3, hold_s=60)
    return Watcher(proxy_cluster(), opts, lambda e, f: events.append((e, f)))


def test_one_get_per_endpoint_per_poll(proxied: dict[str, Any], tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    w = watcher(tmp_path, events)
    n = 10
    for _ in range(n):
        d = w.poll_once()
    w.poller.close()
    counts = {name: p.snapshot() for name, p in proxied.items()}
    assert counts == {"prefill": {"/metrics": n}, "decode": {"/metrics": n},
                      "router": {"/workers": n}, "router_metrics": {"/metrics": n}}
    polls = [f for e, f in events if e == "poll"]
    assert [f["failed"] for f in polls] == [0] * n
    assert d.state == "armed" and not d.held and not d.capture
    assert "pdforensics_poll_duration_seconds_count 10.0" in w.metrics.text()


def test_survives_a_server_disappearing_and_coming_back(proxied: dict[str, Any], tmp_path: Path,
                                                        proxies: Callable[[int, str], Any]) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    w = watcher(tmp_path, events)
    for _ in range(2):
        w.poll_once()
    assert len(w.windows[DECODE_KEY].samples) == 2
    proxied["decode"].stop()  # decode's HTTP port goes away
    for _ in range(3):
        w.poll_once()
    gone = [f for e, f in events if e == "poll"][-3:]
    assert [f["failed"] for f in gone] == [1, 1, 1]
    assert all(f"{DECODE_KEY} metrics" in f["errors"][0] for f in gone)
    assert len(w.windows[DECODE_KEY].samples) == 0
    assert w.suspicions[DECODE_KEY] is None
    assert 'pdforensics_collector_failures_total{source="metrics"} 3.0' in w.metrics.text()
    proxies(PROXY["decode"], f"http://127.0.0.1:{BASE + 1}")  # and comes back
    for _ in range(3):
        d = w.poll_once()
    back = [f for e, f in events if e == "poll"][-3:]
    assert [f["failed"] for f in back] == [0, 0, 0]
    assert len(w.windows[DECODE_KEY].samples) == 2
    assert d.state == "armed" and not d.capture
    w.poller.close()


def test_discovers_undeclared_services(lab: LabInfo) -> None:
    found = {(t.role, t.port, t.metrics_port, t.address) for t in discover_targets(HostSpec("local", "local"))}
    # other labs may run on this machine too: ours must be among what was found
    assert {("prefill", BASE, None, "127.0.0.1"), ("decode", BASE + 1, None, "127.0.0.1"),
            ("router", BASE + 3, BASE + 4, "127.0.0.1")} <= found
