"""ROUTER_BREAKER_OPEN and DECODE_ONLY_DISPATCH on small captures of a router: real smg
/metrics, /workers and log text (tests/data/smg_*) and hand-made variations of them."""

from __future__ import annotations

import calendar
import json
from pathlib import Path
from typing import Any

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.router_view import router_in_flight, worker_breakers
from pdforensics.parsers.http import parse_http_response
from pdforensics.views.loaded import load_capture

DATA = Path(__file__).resolve().parent.parent / "data"
P, D = "http://127.0.0.1:30696", "http://127.0.0.1:30697"


def body(name: str) -> str:
    return parse_http_response((DATA / name).read_bytes()).body.decode()


def router_metrics(state: dict[str, int], sent: dict[str, int], active: int = 0) -> str:
    """smg's per-worker series; `active` requests run on decode (and are admitted)."""
    lines = [f'smg_worker_cb_state{{worker="{w}"}} {v}' for w, v in state.items()]
    lines += [f'smg_worker_requests_total{{worker="{w}",model="m"}} {v}' for w, v in sent.items()]
    lines += [f'smg_worker_requests_active{{worker="{w}"}} {active if w == D else 0}' for w in sent]
    lines.append(f"smg_admission_inflight {active}")
    return "\n".join(lines) + "\n"


def add_router(builder: Any, samples: list[str], log: str | None = None, workers: bool = True) -> None:
    fetches = {"workers": body("smg_workers.http")} if workers else {}
    builder.add(host="r", role="router", port=8000, kind="router", server_info=None,
                raw_samples=samples, raw_fetches=fetches,
                raw_logs={"router_log": log} if log is not None else {})


def keys(a: Any) -> list[str]:
    return [f.key for f in a.findings]


def test_real_smg_breaker_open_capture(builder: Any) -> None:
    """smg's own /metrics and log from the lab's breaker-open fault."""
    text = body("smg_metrics_breaker_open.http")
    add_router(builder, [text, text], log=(DATA / "smg_router_log.txt").read_text())
    bundle = builder.write()
    # the log was written weeks before the synthetic capture: history, not judged; the
    # breaker gauges alone still show the outage
    now = analyze(load_capture(bundle))
    assert now.verdict == "OUTAGE" and keys(now)[:2] == ["ROUTER_NO_WORKERS", "ROUTER_BREAKER_OPEN"]
    assert now.window is not None and any("breaker transition" in h for h in now.window.history)
    a = analyze(load_capture(bundle, since=0.0))  # the whole log
    f = next(f for f in a.findings if f.key == "ROUTER_BREAKER_OPEN")
    assert f.severity == "critical" and f"prefill worker {P}" in f.title and D in f.title
    text = " | ".join(str(e) for e in f.evidence)
    assert f'smg_worker_cb_state{{worker="{P}"}} 1 (open)' in text
    assert "router_log.router.8000.txt:16: 2026-12-03 12:18:26 breaker half_open -> open" in text
    assert "6 x prefill server returned 503" in text
    assert "retries exhausted: decode 2, prefill 2" in text
    assert "--cb-timeout-duration-secs" in f.next_step


def test_half_open_counts_as_open_and_decode_fed_alone(builder: Any) -> None:
    add_router(builder, [router_metrics({P: 2, D: 0}, {P: 5, D: 5}),
                         router_metrics({P: 2, D: 0}, {P: 5, D: 9}, active=3)])
    a = analyze(load_capture(builder.write()))
    f = next(f for f in a.findings if f.key == "ROUTER_BREAKER_OPEN")
    assert f.severity == "critical" and "half_open" in f.title and "other role still gets" in f.title
    assert "DECODE_ONLY_DISPATCH" in keys(a)  # decode 5 -> 9, prefill flat


def test_healthy_router_has_no_router_finding(builder: Any) -> None:
    add_router(builder, [router_metrics({P: 0, D: 0}, {P: 5, D: 5}),
                         router_metrics({P: 0, D: 0}, {P: 9, D: 9}, active=2)])
    a = analyze(load_capture(builder.write()))
    assert not {"ROUTER_BREAKER_OPEN", "DECODE_ONLY_DISPATCH"} & set(keys(a)), keys(a)


def test_breaker_open_from_the_log_alone_without_close(builder: Any) -> None:
    """No metrics port: the log's last transition of a worker is to open, with no close after."""
    log = (f'2026-12-03 12:00:00  INFO smg::worker::circuit_breaker: x.rs:1: Circuit breaker state '
           f'transition: closed -> open worker_url={P} from="closed" to="open"\n'
           f'2026-12-03 12:01:00  INFO smg::worker::circuit_breaker: x.rs:1: Circuit breaker state '
           f'transition: open -> closed worker_url={D} from="open" to="closed"\n')
    add_router(builder, [], log=log)
    bundle = builder.write()
    a = analyze(load_capture(bundle, since=0.0))  # the whole log: it is weeks old
    f = next(f for f in a.findings if f.key == "ROUTER_BREAKER_OPEN")
    assert f.severity == "critical" and P in f.title and D not in f.title  # no prefill left
    assert f.since == calendar.timegm((2026, 12, 3, 12, 0, 0, 0, 0, 0))
    # read with the default window, those transitions are weeks before the capture: history
    old = analyze(load_capture(bundle))
    assert "ROUTER_BREAKER_OPEN" not in keys(old) and old.verdict != "OUTAGE"
    assert old.window is not None and any(P in h for h in old.window.history)


def test_views_of_the_real_samples(builder: Any) -> None:
    add_router(builder, [body("smg_metrics_breaker_open.http")])
    cap = load_capture(builder.write())
    router = next(s for s in cap.services() if s.kind == "router")
    got = {b.worker: (b.role, b.state_name, b.opened) for b in worker_breakers(router)}
    assert got == {P: ("prefill", "open", 1.0), D: ("decode", "open", 1.0)}
    assert router_in_flight(router) == 0.0
    workers = json.loads(body("smg_workers.http"))
    assert workers["stats"] == {"prefill_count": 1, "decode_count": 1, "regular_count": 0}


def test_router_in_flight_counts_admitted_requests(builder: Any) -> None:
    add_router(builder, [router_metrics({P: 0, D: 0}, {P: 1, D: 1}, active=4)])
    cap = load_capture(builder.write())
    router = next(s for s in cap.services() if s.kind == "router")
    assert router_in_flight(router) == 4.0


def test_requests_running_on_decode_alone_are_not_decode_only_dispatch(builder: Any) -> None:
    """The real smg 1.13 while the real engine's decode scheduler is stopped: it sent 22
    requests to each worker, prefill finished its halves (0 active), 3 stay active on decode.
    Decode running requests alone is every PD generation; only decode's dispatch rising while
    prefill's stays flat, or no prefill at all, is dispatch to decode alone."""
    text = body("smg_metrics_decode_stopped.http")
    builder.add(host="r", role="router", port=8000, kind="router", server_info=None,
                raw_samples=[text, text, text],
                raw_fetches={"workers": json.dumps({"workers": [
                    {"url": "http://127.0.0.3:27936", "worker_type": "prefill"},
                    {"url": "http://127.0.0.4:27937", "worker_type": "decode"}]})})
    a = analyze(load_capture(builder.write()))
    breakers = {b.role: b for b in worker_breakers(a_router(builder))}
    assert breakers["decode"].active == 3 and breakers["prefill"].active == 0
    assert breakers["decode"].dispatched_last == breakers["prefill"].dispatched_last == 22
    assert "DECODE_ONLY_DISPATCH" not in keys(a), keys(a)


def a_router(builder: Any) -> Any:
    return next(load_capture(builder.root / "bundle").services("router"))
