"""Verdicts of captures taken over real sshd (the lab's three loopback hosts, logged in as root):
every lab fault gives the right verdict and the right top finding, as issue #3's Done-when asks.
test_lab_verdicts.py checks the same faults through the local transport."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pdforensics.analysis.engine import analyze, analyze_path
from pdforensics.analysis.findings import Analysis
from pdforensics.analysis.result_json import analysis_json
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.config.cluster import load_cluster_file
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.clock import SKEW_S, SKEWED_HOST, faketime_ready
from pdforensics.lab.core import LabInfo
from pdforensics.lab.router import registered_workers
from pdforensics.report.timeline import build_timeline
from pdforensics.views.loaded import load_capture
from pdforensics.views.window import Since
from tests.support import ports
from tests.support.rule_matrix import RuleMatrix

BASE_PORT = ports.block()  # prefill BASE_PORT ... sshd BASE_PORT + 5, found free at run time
LAB_HOSTS = {"127.0.0.2", "127.0.0.3", "127.0.0.4"}
# issue #16's matrix: the faults whose own new rule must fire, as the top finding; every other
# capture must fire none of the new rules (tests/support/rule_matrix.py)
OWN_RULE = {"breaker-open": "ROUTER_BREAKER_OPEN", "probe-hang": "SCHEDULER_PROBE_HANG",
            "decode-only": "DECODE_ONLY_DISPATCH", "clock-skew": "CLOCK_SKEW"}
#: faults whose top finding is the outage itself (the router has no worker left for a role)
TOP = {"breaker-open": "ROUTER_NO_WORKERS", "decode-only": "ROUTER_NO_WORKERS"}
MATRIX = RuleMatrix("ssh lab")

pytestmark = [pytest.mark.lab, pytest.mark.slow,
              pytest.mark.skipif(not shutil.which("ssh") or not Path("/usr/sbin/sshd").exists(),
                                 reason="needs openssh-server (the README's test command installs it)")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("sshverdicts")
    try:
        info = lab_up(d / "lab", fault="healthy", ssh=True, base_port=BASE_PORT)
        yield info, d
    finally:
        lab_down(d / "lab")
        MATRIX.write()


def capture(lab: tuple[LabInfo, Path], fault: str, samples: int = 3,
            stack_dumps: int = 3, row: str | None = None) -> tuple[Analysis, dict[str, Any]]:
    info, d = lab
    set_fault(info.dir, "healthy")  # reset queues a previous fault froze
    time.sleep(1.0)
    since = fault_window()
    set_fault(info.dir, fault)
    time.sleep(2.5)
    cluster = load_cluster_file(info.cluster_file)
    assert {h.address for h in cluster.hosts} == LAB_HOSTS
    assert all(h.port == BASE_PORT + 5 for h in cluster.hosts)
    opts = CaptureOptions(out_dir=d / f"{fault}-{samples}", deadline_s=40, since=since,
                          plan=PlanOptions(samples=samples, interval_s=2.0, stack_dumps=stack_dumps))
    outcome = run_capture(cluster, opts)
    cap = load_capture(outcome.bundle)
    assert {h.address for h in cap.hosts} == LAB_HOSTS and all(h.reachable for h in cap.hosts)
    a = analyze(cap)
    doc = analysis_json(analyze_path(outcome.bundle))  # what `capture` and `analyze BUNDLE` print
    assert doc["verdict"] == a.verdict and [f["key"] for f in doc["findings"]] == keys(a)
    own = OWN_RULE.get(fault)
    MATRIX.check(a, row or fault, {own} if own else set(), TOP.get(fault, own))
    return a, doc


def fault_window() -> Since:
    """One lab hosts fault after fault: each capture's evidence window starts where its fault
    was set (an operator's --since), so an earlier fault's log lines (rank-stuck's soft
    watchdog dumps) are history, not this fault's evidence."""
    now = time.time()
    return Since(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), epoch=now)


def keys(a: Analysis, severity: str | None = None) -> list[str]:
    return [f.key for f in a.findings if severity is None or f.severity == severity]


def evidence(a: Analysis, index: int = 0) -> str:
    return " | ".join(str(e) for e in a.findings[index].evidence)


# Order matters: process-dead is not reversible, so it runs last.

def test_healthy(lab: tuple[LabInfo, Path]) -> None:
    a, _doc = capture(lab, "healthy")
    assert a.verdict == "HEALTHY", (a.summary, keys(a))
    assert not keys(a, "critical")
    assert "CLOCK_SKEW" not in keys(a)
    assert not {"ROUTER_BREAKER_OPEN", "DECODE_ONLY_DISPATCH"} & set(keys(a)), keys(a)


def test_overloaded_but_progressing_is_not_wedged(lab: tuple[LabInfo, Path]) -> None:
    a, _doc = capture(lab, "kv-full")  # ~120 running, queues growing, tokens still flowing
    assert a.verdict == "DEGRADED", (a.summary, keys(a))
    assert "KV_CACHE_PRESSURE" in keys(a, "warning") and "REQUESTS_FROZEN" not in keys(a)


def test_busy_is_not_stuck(lab: tuple[LabInfo, Path]) -> None:
    """Saturated but progressing (issue #14): queues full and moving, token_usage > 0.9,
    every rank in the forward's all-reduce at every dump: no critical finding."""
    a, _doc = capture(lab, "busy")
    assert a.verdict in ("HEALTHY", "DEGRADED"), (a.summary, keys(a))
    assert not keys(a, "critical"), a.summary
    assert "KV_CACHE_PRESSURE" in keys(a, "warning")
    stuck = [f for f in a.findings if f.key in ("ALL_RANKS_STUCK", "RANK_OUTLIER")]
    assert all(f.severity == "info" for f in stuck), [(f.key, f.severity) for f in stuck]
    assert any("yet the server progresses" in f.title for f in stuck), keys(a)


def test_forgotten_requests(lab: tuple[LabInfo, Path]) -> None:
    a, _doc = capture(lab, "forgotten-requests")
    assert a.verdict == "WEDGED", a.summary
    assert a.findings[0].key == "REQUESTS_FROZEN", keys(a)
    assert "decode" in a.findings[0].title


def test_transfer_stuck(lab: tuple[LabInfo, Path]) -> None:
    a, doc = capture(lab, "transfer-stuck")
    assert a.verdict == "WEDGED", a.summary
    assert a.findings[0].key == "DECODE_TRANSFER_STUCK", keys(a)
    assert "num_decode_transfer_queue_reqs 14 → 14" in evidence(a)  # a slow box may lose a sample
    assert doc["findings"][0]["evidence"], doc["findings"][0]


def test_single_scrape_is_never_wedged(lab: tuple[LabInfo, Path]) -> None:
    a, _doc = capture(lab, "transfer-stuck", samples=1, row="transfer-stuck, 1 sample")
    assert a.verdict in ("DEGRADED", "UNKNOWN"), (a.summary, keys(a))
    assert any(s.rule == "REQUESTS_FROZEN" for s in a.skipped)


def test_breaker_open(lab: tuple[LabInfo, Path]) -> None:
    """The stand-in prefill answers 503 until the real smg's breaker opens (ten failures)."""
    a, doc = capture(lab, "breaker-open", samples=1, stack_dumps=1)
    # every prefill breaker open: no prefill worker left, every request fails: an outage
    assert a.verdict == "OUTAGE" and a.findings[0].key == "ROUTER_NO_WORKERS", (a.summary, keys(a))
    assert a.findings[0].outage and "every request fails" in a.findings[0].title
    assert a.since is not None and "ROUTER_NO_WORKERS" in a.since.evidence, a.since
    assert a.mitigate is not None and "prefill-0" in a.mitigate, a.mitigate
    assert doc["verdict"] == "OUTAGE" and doc["mitigate"] == a.mitigate
    top = next(f for f in a.findings if f.key == "ROUTER_BREAKER_OPEN")
    assert top.severity == "critical" and "prefill worker" in top.title, top.title
    text = evidence(a, a.findings.index(top))
    assert 'smg_worker_cb_state{worker="http://127.0.0.3:' in text, text
    assert "breaker closed -> open" in text or "-> half_open" in text or "-> open" in text, text
    assert "server returned 503" in text, text
    assert "DECODE_ONLY_DISPATCH" not in keys(a)
    set_fault(lab[0].dir, "healthy")
    assert _breakers_closed(lab[0]), "the router's breakers did not close after the fault"


def _breakers_closed(info: LabInfo, timeout_s: float = 30.0) -> bool:
    """Wait until every smg_worker_cb_state is 0 again, so later tests see a healthy router."""
    import urllib.request

    h = info.host("router")
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        with urllib.request.urlopen(f"http://{h.bind}:{h.metrics_port}/metrics", timeout=2) as r:
            states = [ln for ln in r.read().decode().splitlines() if ln.startswith("smg_worker_cb_state{")]
        if states and all(ln.endswith(" 0") for ln in states):
            return True
        time.sleep(0.5)
    return False


@pytest.fixture(scope="module")
def hung(lab: tuple[LabInfo, Path]) -> Analysis:
    return capture(lab, "hung-endpoint")[0]


def test_hung_endpoint(hung: Analysis) -> None:
    assert hung.verdict == "WEDGED", hung.summary
    hang = [f for f in hung.findings if f.key == "SCHEDULER_ENDPOINT_HANG"]
    assert {f.title.split()[0] for f in hang} == {"prefill-0", "decode-0"}
    assert all(f.severity == "critical" for f in hang)


def test_hung_endpoint_top_finding(hung: Analysis) -> None:
    assert hung.findings[0].key == "SCHEDULER_ENDPOINT_HANG", keys(hung)


def test_rank_stuck(lab: tuple[LabInfo, Path]) -> None:
    a, _doc = capture(lab, "rank-stuck")
    assert a.verdict == "WEDGED", a.summary
    assert a.findings[0].key == "RANK_OUTLIER", keys(a)
    assert keys(a).count("RANK_OUTLIER") == 1
    assert "decode" in a.findings[0].title and "rank TP1" in a.findings[0].title
    assert "ALL_RANKS_STUCK" not in keys(a)


@pytest.mark.skipif(not faketime_ready(), reason="needs libfaketime (apt-get install faketime)")
def test_clock_skew(lab: tuple[LabInfo, Path]) -> None:
    """decode-0's sshd sessions run under libfaketime 90 s ahead: CLOCK_SKEW names that host with
    its offset and the round trip, and no other; py-spy (static, LD_PRELOAD ignored) still reads
    that host's ranks; the timeline says by how much its times were corrected."""
    info, d = lab
    since = fault_window()
    set_fault(info.dir, "clock-skew")
    try:
        opts = CaptureOptions(out_dir=d / "clock-skew", deadline_s=20, since=since,
                              plan=PlanOptions(samples=1, stack_dumps=1, probes=False))
        cap = load_capture(run_capture(load_cluster_file(info.cluster_file), opts).bundle)
    finally:
        set_fault(info.dir, "healthy")
    offsets = {h.name: h.clock_offset_s for h in cap.hosts}
    # a measurement is good to half its round trip (a loaded machine starts `date` late)
    bound = {e.host: 1.0 + e.duration_s / 2 for e in cap.results if e.source == "clock"}
    assert offsets[SKEWED_HOST] == pytest.approx(SKEW_S, abs=bound[SKEWED_HOST]), (offsets, bound)
    assert all(o is not None and abs(o) < bound[n] for n, o in offsets.items() if n != SKEWED_HOST)
    a = analyze(cap)
    MATRIX.check(a, "clock-skew", {"CLOCK_SKEW"}, "CLOCK_SKEW")
    assert not keys(a, "critical"), keys(a)
    (f,) = [f for f in a.findings if f.key == "CLOCK_SKEW"]
    assert f.severity == "warning" and f.subject == SKEWED_HOST
    assert f.title.startswith(f"{SKEWED_HOST}: clock ahead by "), f.title
    m = re.search(r"offset \+(\d+\.\d{3}) s .* (\d+) ms round trip", str(f.evidence[0]))
    assert m is not None and getattr(f.evidence[0], "host", None) == SKEWED_HOST, str(f.evidence[0])
    assert float(m.group(1)) == pytest.approx(offsets[SKEWED_HOST], abs=1e-3)
    assert 0 < int(m.group(2)) < 5000
    decode = next(cap.services("decode"))
    assert decode.ranks and all(p.stacks and p.stacks[0].dumps for p in decode.ranks)
    view, _missing = build_timeline(cap)
    assert view is not None and f"{SKEWED_HOST} +{offsets[SKEWED_HOST]:.3f} s (ahead)" in view.clock


def test_probe_hang(lab: tuple[LabInfo, Path]) -> None:
    """/health_generate hangs while /health answers: SCHEDULER_PROBE_HANG on both servers."""
    a, _doc = capture(lab, "probe-hang", samples=2, stack_dumps=1)
    probes = [f for f in a.findings if f.key == "SCHEDULER_PROBE_HANG"]
    assert {f.title.split()[0] for f in probes} == {"prefill-0", "decode-0"}, keys(a)
    assert not [k for k in keys(a, "critical") if k != "SCHEDULER_PROBE_HANG"], keys(a)


def test_decode_only(lab: tuple[LabInfo, Path]) -> None:
    """The prefill worker deregistered from the real smg (DELETE /workers/{id}) while the decode
    holds a request it was sent: decode has work, no prefill is left to feed it."""
    info, _d = lab
    try:
        a, _doc = capture(lab, "decode-only", samples=2, stack_dumps=1)
    finally:
        set_fault(info.dir, "healthy")  # registers the prefill again (POST /workers)
    assert a.verdict == "OUTAGE" and a.findings[0].key == "ROUTER_NO_WORKERS", keys(a)
    assert "no prefill" in a.findings[0].title, a.findings[0].title
    top = next(f for f in a.findings if f.key == "DECODE_ONLY_DISPATCH")
    assert top.severity == "critical" and "none to prefill" in top.title, top.title
    text = evidence(a, a.findings.index(top))
    assert f'decode worker http://127.0.0.4:{BASE_PORT + 1}: dispatched' in text, text
    assert "no prefill worker registered" in text, text
    assert "ROUTER_BREAKER_OPEN" not in keys(a)
    h = info.host("router")
    assert registered_workers(f"http://{h.bind}:{h.http_port}") == 2


def test_process_dead(lab: tuple[LabInfo, Path]) -> None:
    a, _doc = capture(lab, "process-dead")
    assert a.verdict == "WEDGED", a.summary
    assert a.findings[0].key == "PROCESS_STATE", keys(a)
    assert "1 of 2 scheduler ranks" in a.findings[0].title
