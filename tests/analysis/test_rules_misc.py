"""Endpoint hang, process state, restarts, config, logs, Xid, failures, client dumps."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdforensics.analysis.engine import analyze
from pdforensics.views.loaded import load_capture

DATA = Path(__file__).resolve().parent.parent / "data"
GEN = "sglang:generation_tokens_total"
FROZEN = {GEN: 5, "sglang:num_running_reqs": 9}


def moving(i: int, **kw: object) -> dict[str, object]:
    return {GEN: 100 + 50 * i, "sglang:num_running_reqs": 9, **kw}


def run(builder: Any, **kw: Any) -> Any:
    return analyze(load_capture(builder.write()))


def keys(a: Any) -> list[str]:
    return [f.key for f in a.findings]


def test_server_info_timeout_with_frozen_counters(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, server_info="timeout")
    a = run(builder)
    f = next(f for f in a.findings if f.key == "SCHEDULER_ENDPOINT_HANG")
    assert f.severity == "critical" and f.wedge
    assert "timed out" in str(f.evidence[0])


def test_server_info_timeout_while_progressing_is_only_a_warning(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                server_info="timeout")
    a = run(builder)
    f = next(f for f in a.findings if f.key == "SCHEDULER_ENDPOINT_HANG")
    assert f.severity == "warning" and not f.wedge
    assert a.verdict == "DEGRADED"


def test_zombie_rank(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, states={"TP1": "Z"})
    a = run(builder)
    f = a.findings[0]
    assert f.key == "PROCESS_STATE" and "zombie" in f.title and "TP1" in f.title
    assert a.verdict == "WEDGED"


def test_d_state_is_a_warning(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, states={"TP0": "D"})
    a = run(builder)
    f = next(f for f in a.findings if f.key == "PROCESS_STATE")
    assert f.severity == "warning" and "D state" in f.title


def test_d_state_while_the_server_progresses_is_info(builder: Any) -> None:
    """One D-state read is a moment in the kernel when the counters move (a healthy lab rank
    was caught so in CI and the lab judged DEGRADED): info, not a warning."""
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                states={"TP0": "D"})
    a = run(builder)
    f = next(f for f in a.findings if f.key == "PROCESS_STATE")
    assert f.severity == "info" and "D state" in f.title and "yet the server progresses" in f.title
    assert a.verdict == "HEALTHY"


def test_decode_restarted_alone(builder: Any) -> None:
    t = time.time()
    builder.add(host="r", role="router", port=3, kind="router", start=t - 7200)
    builder.add(host="p", role="prefill", port=1, samples=[moving(i) for i in range(3)],
                start=t - 7000)
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                start=t - 60)
    a = run(builder)
    f = next(f for f in a.findings if f.key == "RESTART_ORDER")
    assert f.severity == "warning" and "decode:2 restarted alone" in f.title
    assert all("process start time" in str(e) for e in f.evidence)


def test_pd_config_mismatch(builder: Any) -> None:
    base = ("python", "-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "2")
    builder.add(host="p", role="prefill", port=1, samples=[moving(i) for i in range(3)],
                server_info=None, argv=(*base, "--page-size", "64", "--disaggregation-mode",
                                        "prefill"))
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                server_info=None, argv=(*base, "--page-size=32", "--kv-cache-dtype", "fp8_e4m3",
                                        "--disaggregation-mode", "decode"))
    a = run(builder)
    f = next(f for f in a.findings if f.key == "PD_CONFIG_MISMATCH")
    text = " ".join(str(e) for e in f.evidence)
    assert f.severity == "critical"
    assert "page size: prefill p prefill:1 64 (cmdline) vs decode d decode:2 32 (cmdline)" in text
    assert "kv cache dtype" in text and "auto (default)" in text
    assert "model path" not in text


def test_old_and_reexported_metric_names(builder: Any) -> None:
    old = {"sglang_num_prefill_prealloc_queue_reqs": 7, "sglang_num_running_reqs": 3, GEN: 5}
    builder.add(host="p", role="prefill", port=1, samples=[old] * 3)
    a = run(builder)
    f = next(f for f in a.findings if f.key == "PREFILL_BOOTSTRAP_STUCK")
    assert "7 → 7 → 7" in str(f.evidence[0]) and f.severity == "critical"


def test_transfer_failures_rising(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[
        moving(i, **{"sglang:num_transfer_failed_reqs_total": 3 + 2 * i}) for i in range(3)])
    a = run(builder)
    f = next(f for f in a.findings if f.key == "KV_TRANSFER_FAILURES")
    assert f.severity == "warning" and "+4 during the capture" in str(f.evidence[0])


def test_log_signatures_recent_and_old(builder: Any) -> None:
    now = time.gmtime(1_800_000_000 - 5)
    old = time.gmtime(1_800_000_000 - 86400)
    fmt = "%Y-%m-%d %H:%M:%S"
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                log=f"[{time.strftime(fmt, now)} TP1] Decode transfer failed for request x\n")
    builder.add(host="p", role="prefill", port=1, samples=[moving(i) for i in range(3)],
                log=f"[{time.strftime(fmt, old)} TP0] Decode transfer failed for request y\n")
    a = run(builder)
    sev = {f.title.split()[0]: f.severity for f in a.findings if f.key == "LOG_SIGNATURE"}
    # a day old is before the evidence window (the server started long before the 10 min
    # look-back): history, shown and never judged, so no finding of its own
    assert sev == {"d": "warning"}
    assert a.window is not None and a.window.how == "look-back 10 min"
    assert [h for h in a.window.history if "p prefill:1 log: DECODE_TRANSFER_FAILED" in h]
    assert a.since is None or a.since.at >= 1_800_000_000 - 600


def test_xid_errors(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)])
    builder.kernel["d"] = (DATA / "nvsmi_xid_kernel.txt").read_text()
    a = run(builder)
    f = next(f for f in a.findings if f.key == "GPU_XID")
    assert f.severity == "critical" and "79" in f.title


def test_gpu_idle_with_work(builder: Any) -> None:
    rows = (DATA / "nvsmi_query_gpu_h200.csv").read_text().splitlines()[:3]
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, gpus="\n".join(rows))
    a = run(builder)
    f = next(f for f in a.findings if f.key == "GPU_IDLE_WITH_WORK")
    assert "GPU 0 0 %, GPU 1 0 %" in f.title


def test_work_that_came_after_the_gpu_read_is_not_idle_with_work(builder: Any) -> None:
    """A server that had nothing to run when nvidia-smi read its GPUs (at the first sample)
    and took requests a second later: its GPUs were rightly idle at that read."""
    rows = (DATA / "nvsmi_query_gpu_h200.csv").read_text().splitlines()[:3]
    samples = [{GEN: 100, "sglang:num_running_reqs": 0}, *(moving(i) for i in (1, 2))]
    builder.add(host="d", role="decode", port=2, samples=samples, gpus="\n".join(rows))
    assert "GPU_IDLE_WITH_WORK" not in keys(run(builder))


def test_one_busy_gpu_is_not_idle(builder: Any) -> None:
    gpus = (DATA / "nvsmi_query_gpu_h200.csv").read_text()  # GPU 2 at 100 %
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, gpus=gpus)
    assert "GPU_IDLE_WITH_WORK" not in keys(run(builder))


GOROUTINES = """goroutine 1 [select, 4 minutes]:
net/http.(*persistConn).roundTrip(0xc000150000, 0xc0001b2000)
\t/usr/local/go/src/net/http/transport.go:2652 +0x979
net/http.(*Transport).roundTrip(0xc0000c4000, 0xc0001a4000)
\t/usr/local/go/src/net/http/transport.go:590 +0x7a8
main.worker()
\t/src/main.go:20 +0x25

goroutine 2 [select, 3 minutes]:
net/http.(*persistConn).roundTrip(0xc000150000, 0xc0001b2000)
\t/usr/local/go/src/net/http/transport.go:2652 +0x979
main.worker()
\t/src/main.go:20 +0x25

goroutine 3 [chan receive]:
main.main()
\t/src/main.go:30 +0x25
"""


def test_client_goroutine_dump(builder: Any, tmp_path: Path) -> None:
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3)
    dump = tmp_path / "client.txt"
    dump.write_text(GOROUTINES)
    bad = tmp_path / "bad.txt"
    bad.write_text("\tfile.go:1 +0x1\n")
    a = analyze(load_capture(builder.write()), client_dumps=[dump])
    f = next(f for f in a.findings if f.key == "CLIENT_BLOCKED")
    assert f.title == "2 goroutines blocked in net/http roundTrip for 3-4 minutes"
    assert f.severity == "warning"
    assert any("num_running_reqs 9" in str(e) for e in f.evidence)
    a2 = analyze(load_capture(builder.root / "bundle"), client_dumps=[bad])
    assert any(s.rule == "CLIENT_BLOCKED" and "bad.txt" in s.reason for s in a2.skipped)


NAMES = ["sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", GEN,
         "sglang:realtime_tokens_total", "sglang:num_decode_transfer_queue_reqs",
         "sglang_num_prefill_prealloc_queue_reqs", "sglang:num_transfer_failed_reqs_total",
         "sglang:scheduler_idle_seconds_total", "sglang:num_retracted_reqs", "smg_x"]
VALUES = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                   st.dictionaries(st.integers(0, 3), st.floats(-10, 1e6), max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(samples=st.lists(st.dictionaries(st.sampled_from(NAMES), VALUES), max_size=4),
       role=st.sampled_from(["prefill", "decode", "unified"]),
       ranks=st.sampled_from([None, (), ("TP0",), ("TP1", "TP0")]),
       info=st.sampled_from(["ok", "timeout", None]))
def test_rules_never_crash(builder: Any, samples: list[dict[str, Any]], role: str,
                           ranks: Any, info: str | None) -> None:
    builder.servers.clear()
    builder.add(host="h", role=role, port=5, samples=samples, ranks=ranks, server_info=info)
    a = analyze(load_capture(builder.write()))
    assert not [s for s in a.skipped if "crashed" in s.reason], a.skipped
    assert a.verdict in ("WEDGED", "DEGRADED", "HEALTHY", "UNKNOWN")
    if len(samples) < 2:
        assert a.verdict != "WEDGED" or any(f.key == "PROCESS_STATE" for f in a.findings)


def test_log_signature_window_and_consequences(builder: Any) -> None:
    """Old cause lines and recent consequence lines alone leave LOG_SIGNATURE at info;
    a recent rising prealloc queue is a cause."""
    fmt = "%Y-%m-%d %H:%M:%S"
    old = time.strftime(fmt, time.gmtime(1_800_000_000 - 86400))
    now = time.strftime(fmt, time.gmtime(1_800_000_000 - 5))
    log = (f"[{old} TP0] Decode transfer failed for request rank=0 x with exception "
           f"KVTransferError(bootstrap_room=1): Request 1 timed out after 300.0s in "
           f"KVPoll.WaitingForInput\n"
           f"[{now} TP0] Prefill bootstrap failed for request rank=0 req.rid='a' "
           f"req.bootstrap_room=2 with exception KVTransferError(bootstrap_room=2): "
           f"Aborted by AbortReq.\n")
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)], log=log)
    rising = "".join(
        f"[{now} TP0] Decode batch, #running-req: 1, #prealloc-req: {n}, #transfer-req: 0, "
        f"#queue-req: 0\n" for n in (1, 5, 9, 14))
    builder.add(host="e", role="decode", port=3, samples=[moving(i) for i in range(3)],
                log=rising)
    a = run(builder)
    sev = {f.title.split()[0]: f.severity for f in a.findings if f.key == "LOG_SIGNATURE"}
    assert sev == {"d": "info", "e": "warning"}


def test_sglangs_watchdog_leads_the_endpoint_hang_it_explains(builder: Any) -> None:
    """The real engine's TP 2 watchdog run (SGLang 0.5.23 on this CPU, field corpus): the
    watchdog fired on both ranks and dumped their stacks; /server_info hangs and the counters
    stand still. SGLang's own verdict, which names where the batch hung, comes first; the hang
    is the same blocked loop seen from outside."""
    log = (DATA / "field" / "sglang_log" / "real-sglang0523-decode-watchdog-tp2.log").read_text()
    log = log.replace("[2026-12-04 17:47:", "[2027-01-15 07:57:")  # into the capture's window
    builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3, server_info="timeout", log=log)
    a = run(builder)
    top = a.findings[0]
    assert top.key == "SCHEDULER_WATCHDOG" and top.severity == "critical", keys(a)
    assert "TP0" in top.title and "TP1" in top.title, top.title
    hang = next(f for f in a.findings if f.key == "SCHEDULER_ENDPOINT_HANG")
    assert hang.severity == "critical" and a.findings.index(hang) > 0
    assert a.verdict == "WEDGED"


def test_sglangs_kv_pool_full_line_is_kv_pressure(builder: Any) -> None:
    """The real engine under long prompts (field corpus, SGLang 0.5.23, --max-total-tokens
    4096): one 'KV cache pool is full. Retract requests.' line, the retraction counter at 1
    and not rising during the capture, decoding goes on: an overloaded decode (a warning), not
    a healthy one and not a wedge."""
    log = (DATA / "field" / "log" / "real-sglang0523-decode-kv-pool-full-retract.log").read_text()
    # into the capture's window: 11:29-11:30 -> 07:57-07:58
    log = log.replace("[2026-12-05 11:29:", "[2027-01-15 07:57:").replace("[2026-12-05 11:30:", "[2027-01-15 07:58:")
    retracted = "sglang:num_retracted_requests_total"
    builder.add(host="d", role="decode", port=2, log=log,
                samples=[moving(i, **{retracted: 1, "sglang:token_usage": 0.68}) for i in range(3)])
    a = run(builder)
    f = next(f for f in a.findings if f.key == "KV_CACHE_PRESSURE")
    text = " | ".join(str(e) for e in f.evidence)
    assert f.severity == "warning" and "KV cache pool is full" in text, text
    assert "num_retracted_requests_total 1 (since the server started" in text, text
    assert a.verdict == "DEGRADED" and a.findings[0].key == "KV_CACHE_PRESSURE", keys(a)
    assert a.diagnosis is not None and (a.diagnosis.stage, a.diagnosis.side) == ("decode_forward", "decode")
    assert not a.diagnosis.wedge
