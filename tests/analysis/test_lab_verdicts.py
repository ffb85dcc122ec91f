"""Verdicts on real lab captures (local transport): one lab, faults switched in turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.config.cluster import load_cluster_file
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from pdforensics.views.loaded import load_capture
from tests.support import ports

pytestmark = [pytest.mark.lab, pytest.mark.slow]

BASE_PORT = ports.block()  # found free at run time


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("lab")
    try:
        info = lab_up(d / "lab", fault="healthy", ssh=False, base_port=BASE_PORT)
        yield info, d
    finally:
        lab_down(d / "lab")


def capture(lab: tuple[LabInfo, Path], fault: str, samples: int = 3) -> Analysis:
    info, d = lab
    set_fault(info.dir, "healthy")  # reset queues a previous fault froze
    time.sleep(1.0)
    set_fault(info.dir, fault)
    time.sleep(2.5)
    out = d / f"{fault}-{samples}"
    opts = CaptureOptions(out_dir=out, deadline_s=30,
                          plan=PlanOptions(samples=samples, interval_s=2.0, stack_dumps=3))
    outcome = run_capture(load_cluster_file(info.cluster_file), opts)
    a = analyze(load_capture(outcome.bundle))
    # the lab's servers keep sglang's 300 s timeouts: only `safeguards-off` (its own lab) fires it
    assert "SAFEGUARDS_DISABLED" not in keys(a), fault
    return a


def keys(a: Analysis, severity: str | None = None) -> list[str]:
    return [f.key for f in a.findings if severity is None or f.severity == severity]


# Order matters: process-dead is not reversible, so it runs last.

def test_healthy(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "healthy")
    assert a.verdict == "HEALTHY", a.summary
    assert not keys(a, "critical")


def test_kv_full_is_pressure_not_wedge(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "kv-full")
    assert "KV_CACHE_PRESSURE" in keys(a, "warning")
    assert "SCHEDULER_PROBE_HANG" not in keys(a)  # the scheduler still finishes requests
    assert a.verdict != "WEDGED", a.summary
    assert a.verdict == "DEGRADED"


def test_forgotten_requests(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "forgotten-requests")
    assert a.verdict == "WEDGED"
    frozen = [f for f in a.findings if f.key == "REQUESTS_FROZEN"]
    assert frozen and any("decode" in f.title for f in frozen)
    # as on the real 0.5.23 (issue 34): the queue gauges read 0 and the idle counter stands still
    # (both are written with batch stats); the requests held open on /generate are the work
    text = " | ".join(str(e) for f in frozen for e in f.evidence)
    assert "http_requests_active 23" in text and "frozen too (SGLang updates it only when a batch runs" in text
    assert "SCHEDULER_PROBE_HANG" not in keys(a)


def test_transfer_stuck(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "transfer-stuck")
    assert a.verdict == "WEDGED"
    first = a.findings[0]
    assert first.key == "DECODE_TRANSFER_STUCK", keys(a)
    assert "14 → 14 → 14" in " ".join(str(e) for e in first.evidence)
    assert "KV_TRANSFER_FAILURES" in keys(a, "warning")  # the counter rises in this fault
    assert "SCHEDULER_PROBE_HANG" not in keys(a)  # the loop turns: the probe comes back


def test_single_scrape_of_a_wedge_is_not_wedged(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "transfer-stuck", samples=1)
    assert a.verdict in ("DEGRADED", "UNKNOWN"), a.summary
    assert any(s.rule == "REQUESTS_FROZEN" for s in a.skipped)
    assert any("second /metrics sample" in m for m in a.missing)


def test_hung_endpoint(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "hung-endpoint")
    hang = [f for f in a.findings if f.key == "SCHEDULER_ENDPOINT_HANG"]
    assert hang and all(f.severity == "critical" for f in hang)
    assert {f.title.split()[0] for f in hang} == {"prefill-0", "decode-0"}
    assert a.verdict == "WEDGED"
    # the probe hangs too (rank 0 is blocked): one finding per server, the probe folded in
    assert "SCHEDULER_PROBE_HANG" not in keys(a)
    assert all(f.merged == ("SCHEDULER_PROBE_HANG",) for f in hang)


def test_probe_hang(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "probe-hang")
    probes = [f for f in a.findings if f.key == "SCHEDULER_PROBE_HANG"]
    assert {f.title.split()[0] for f in probes} == {"prefill-0", "decode-0"}, keys(a)
    assert a.findings[0].key == "SCHEDULER_PROBE_HANG", keys(a)
    assert not [k for k in keys(a, "critical") if k != "SCHEDULER_PROBE_HANG"], keys(a)
    assert a.verdict == "DEGRADED", a.summary  # the counters move: not a proven wedge


def test_rank_stuck(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "rank-stuck")
    outliers = [f for f in a.findings if f.key == "RANK_OUTLIER"]
    assert len(outliers) == 1, keys(a)
    assert "decode" in outliers[0].title and "rank TP1" in outliers[0].title
    assert "ALL_RANKS_STUCK" not in keys(a)
    # the rank in a collective explains the frozen queues: it sorts before them
    assert keys(a).index("RANK_OUTLIER") < keys(a).index("REQUESTS_FROZEN")
    # decode rank 0 waits in a broadcast, so the probe may hang: the stuck rank explains it
    assert "SCHEDULER_PROBE_HANG" not in keys(a)
    assert outliers[0].merged in ((), ("SCHEDULER_PROBE_HANG",)), outliers[0].merged
    assert a.verdict == "WEDGED"


def test_rank_stuck_watchdog_dump_is_harvested_from_the_log(lab: tuple[LabInfo, Path]) -> None:
    """The stalled rank's watchdog writes its py-spy dump into the log; a capture without
    py-spy still has that rank's stack, with the time it was logged."""
    info, d = lab
    log = info.dir / "logs" / "decode.log"
    before = log.read_text().count("Pyspy dump for PID")
    set_fault(info.dir, "healthy")
    time.sleep(1.0)
    set_fault(info.dir, "rank-stuck")
    t0 = time.time()
    while log.read_text().count("Pyspy dump for PID") == before and time.time() < t0 + 20:
        time.sleep(0.5)
    opts = CaptureOptions(out_dir=d / "logstacks", deadline_s=20,
                          plan=PlanOptions(samples=1, stacks=False, probes=False))
    cap = load_capture(run_capture(load_cluster_file(info.cluster_file), opts).bundle)
    from pdforensics.analysis.log_stacks import log_dumps
    from pdforensics.report.stacks import build_stacks

    ours = [ld for ld in log_dumps(cap) if ld.taken_at is not None and ld.taken_at >= t0 - 2]
    assert ours and {(ld.role, ld.rank) for ld in ours} == {("decode", "TP1")}, ours
    ld = ours[-1]
    decode = next(cap.services("decode"))
    tp1 = next(p for p in decode.processes if p.info.rank == "TP1")
    assert ld.dump.pid == tp1.info.pid and ld.kind == "scheduler"
    assert ld.source.startswith("log:")
    frames = [str(f) for t in ld.dump.threads if t.name == "MainThread" for f in t.frames]
    assert any("all_reduce" in f for f in frames), frames
    assert ld.taken_at is not None and abs(ld.taken_at - time.time()) < 60
    view, _missing = build_stacks(cap)
    assert view is not None and any("TP1" in r.who for r in view.from_logs)


def test_process_dead(lab: tuple[LabInfo, Path]) -> None:
    a = capture(lab, "process-dead")
    assert a.findings[0].key == "PROCESS_STATE", keys(a)
    assert "1 of 2 scheduler ranks" in a.findings[0].title
    assert a.verdict == "WEDGED"
