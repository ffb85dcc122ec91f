"""Busy is not stuck (issue #14): ALL_RANKS_STUCK and RANK_OUTLIER are critical only when the
same stack persists across >= 3 dumps spanning >= 10 s and the role's progress is frozen or
cannot be judged; ranks in one frame on a progressing server are info at most."""

from __future__ import annotations

from typing import Any

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Analysis, Finding
from pdforensics.views.loaded import load_capture
from tests.analysis.test_rules_ranks import ALL_REDUCE, BROADCAST, FROZEN, POLL, RECV, dump

MOVING = [{"sglang:generation_tokens_total": 1000 + 900 * i, "sglang:num_running_reqs": 120,
           "sglang:num_queue_reqs": 180 + 7 * (i % 2), "sglang:token_usage": 0.95}
          for i in range(3)]
SHUTDOWN = ("    _shutdown (threading.py:1590)\n")


def run(builder: Any, frames: dict[str, str], dumps: int, interval: float,
        samples: list[dict[str, Any]], role: str = "decode") -> Analysis:
    stacks = {r: [dump(10 + i, f"sglang::scheduler_{r}", f)] * dumps
              for i, (r, f) in enumerate(frames.items())}
    builder.add(host="d", role=role, port=2, tp=len(frames), samples=samples, stacks=stacks,
                stack_interval=interval)
    return analyze(load_capture(builder.write()))


def found(a: Analysis, key: str) -> list[Finding]:
    return [f for f in a.findings if f.key == key]


SAME = {"TP0": ALL_REDUCE, "TP1": ALL_REDUCE}
ODD = {"TP0": BROADCAST, "TP1": ALL_REDUCE}


def test_all_ranks_in_one_frame_of_a_progressing_server_is_info(builder: Any) -> None:
    a = run(builder, SAME, dumps=3, interval=5.0, samples=MOVING)
    f = found(a, "ALL_RANKS_STUCK")
    assert [x.severity for x in f] == ["info"] and not f[0].wedge
    assert "yet the server progresses" in f[0].title
    assert not [x for x in a.findings if x.severity == "critical"], a.summary
    assert a.verdict in ("HEALTHY", "DEGRADED"), a.summary


def test_all_ranks_in_one_frame_of_a_frozen_server_is_critical(builder: Any) -> None:
    a = run(builder, SAME, dumps=3, interval=5.0, samples=[FROZEN] * 3)
    f = found(a, "ALL_RANKS_STUCK")
    assert [x.severity for x in f] == ["critical"] and f[0].wedge
    assert a.verdict == "WEDGED"


def test_two_dumps_are_too_few_to_call_ranks_stuck(builder: Any) -> None:
    a = run(builder, SAME, dumps=2, interval=10.0, samples=[FROZEN] * 3)
    f = found(a, "ALL_RANKS_STUCK")
    assert [x.severity for x in f] == ["warning"] and not f[0].wedge
    assert any("needs >= 3 dumps" in str(e) for e in f[0].evidence), f[0].evidence


def test_three_dumps_within_ten_seconds_are_too_short(builder: Any) -> None:
    a = run(builder, SAME, dumps=3, interval=2.0, samples=[FROZEN] * 3)
    assert [x.severity for x in found(a, "ALL_RANKS_STUCK")] == ["warning"]


def test_unjudged_progress_with_persistent_stacks_is_critical(builder: Any) -> None:
    a = run(builder, SAME, dumps=3, interval=5.0, samples=[FROZEN])  # one scrape only
    f = found(a, "ALL_RANKS_STUCK")
    assert [x.severity for x in f] == ["critical"]
    assert not f[0].wedge  # frozen progress was not shown: no WEDGED from this alone


def test_outlier_on_a_progressing_server_is_info(builder: Any) -> None:
    a = run(builder, ODD, dumps=3, interval=5.0, samples=MOVING)
    f = found(a, "RANK_OUTLIER")
    assert [x.severity for x in f] == ["info"] and "yet the server progresses" in f[0].title
    assert not [x for x in a.findings if x.severity == "critical"]


def test_outlier_needs_three_dumps_over_ten_seconds(builder: Any) -> None:
    two = run(builder, ODD, dumps=2, interval=10.0, samples=[FROZEN] * 3)
    assert [x.severity for x in found(two, "RANK_OUTLIER")] == ["warning"]


def test_outlier_short_span_is_warning(builder: Any) -> None:
    short = run(builder, ODD, dumps=3, interval=2.0, samples=[FROZEN] * 3)
    assert [x.severity for x in found(short, "RANK_OUTLIER")] == ["warning"]


def test_outlier_persistent_and_frozen_is_critical(builder: Any) -> None:
    a = run(builder, ODD, dumps=3, interval=5.0, samples=[FROZEN] * 3)
    f = found(a, "RANK_OUTLIER")
    assert [x.severity for x in f] == ["critical"] and f[0].wedge
    assert "peer that never joined" in f[0].next_step


def test_next_step_fits_the_frame(builder: Any) -> None:
    a = run(builder, {"TP0": SHUTDOWN, "TP1": SHUTDOWN}, dumps=3, interval=5.0,
            samples=[FROZEN] * 3)
    step = found(a, "ALL_RANKS_STUCK")[0].next_step
    assert "traceback" in step and "log" in step and "peer" not in step


def test_next_step_for_a_kv_poll_names_the_prefill_side(builder: Any) -> None:
    a = run(builder, {"TP0": POLL, "TP1": POLL}, dumps=3, interval=5.0, samples=[FROZEN] * 3)
    step = found(a, "ALL_RANKS_STUCK")[0].next_step
    assert "prefill side" in step and "transfer backend" in step


def test_next_step_for_a_collective_names_the_missing_peer(builder: Any) -> None:
    a = run(builder, SAME, dumps=3, interval=5.0, samples=[FROZEN] * 3)
    assert "peer that never joined" in found(a, "ALL_RANKS_STUCK")[0].next_step


def test_idle_ranks_stay_silent(builder: Any) -> None:
    a = run(builder, {"TP0": RECV, "TP1": RECV}, dumps=3, interval=5.0, samples=[FROZEN] * 3)
    assert not found(a, "ALL_RANKS_STUCK")


def saturated(role: str, i: int) -> dict[str, Any]:
    q = "sglang:num_decode_prealloc_queue_reqs" if role == "decode" else \
        "sglang:num_prefill_bootstrap_queue_reqs"
    return {"sglang:generation_tokens_total": 5000 + 800 * i,
            "sglang:realtime_tokens_total": 9000 + 7000 * i,
            "sglang:forward_execution_seconds_total": 100 + 1.9 * i,
            "sglang:num_running_reqs": 126, "sglang:num_queue_reqs": (190, 230, 170)[i],
            q: (40, 55, 31)[i], "sglang:token_usage": (0.95, 0.96, 0.94)[i]}


GPUS_BUSY = "\n".join(f"{g}, GPU-{g}, 98, 80000" for g in range(4))


def test_saturated_progressing_pd_cluster_has_no_critical_finding(builder: Any) -> None:
    """Queues full and moving, KV > 0.9, GPUs busy, every rank in the tp all-reduce at each of
    3 dumps over 10 s, counters rising: HEALTHY or DEGRADED, never a critical finding."""
    for role, port in (("prefill", 1), ("decode", 2)):
        builder.add(host=role[0], role=role, port=port, tp=2,
                    samples=[saturated(role, i) for i in range(3)],
                    stacks={r: [dump(20 + port * 2 + n, f"sglang::scheduler_{r}", ALL_REDUCE)] * 3
                            for n, r in enumerate(("TP0", "TP1"))},
                    stack_interval=5.0, gpus=GPUS_BUSY)
    a = analyze(load_capture(builder.write()))
    assert a.verdict in ("HEALTHY", "DEGRADED"), a.summary
    assert not [f.key for f in a.findings if f.severity == "critical"], a.summary
    assert {(f.key, f.severity) for f in found(a, "ALL_RANKS_STUCK")} == {("ALL_RANKS_STUCK", "info")}
    assert len(found(a, "ALL_RANKS_STUCK")) == 2  # one per role
    assert "GPU_IDLE_WITH_WORK" not in [f.key for f in a.findings]
