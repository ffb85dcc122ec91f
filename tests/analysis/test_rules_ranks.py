"""RANK_OUTLIER, ALL_RANKS_STUCK, PYSPY_UNAVAILABLE from py-spy text in synthetic bundles."""

from __future__ import annotations

from typing import Any

from pdforensics.analysis.engine import analyze
from pdforensics.views.loaded import load_capture

FROZEN = {"sglang:generation_tokens_total": 5, "sglang:num_running_reqs": 9}

LOOP = """    Scheduler.event_loop_normal_disagg_decode (sglang/srt/managers/scheduler.py:124)
    run_scheduler_process (sglang/srt/managers/scheduler.py:176)
    BaseProcess.run (multiprocessing/process.py:108)
"""


def dump(pid: int, title: str, frames: str) -> str:
    return (f"Process {pid}: {title}\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            f'Thread {pid} (idle): "MainThread"\n{frames}{LOOP}')


ALL_REDUCE = ("    GroupCoordinator._wait_for_peers (sglang/srt/distributed/parallel_state.py:21)\n"
              "    GroupCoordinator.all_reduce (sglang/srt/distributed/parallel_state.py:15)\n")
BROADCAST = "    broadcast_pyobj (sglang/srt/utils/common.py:10)\n"
RECV = "    Scheduler.recv_requests (sglang/srt/managers/scheduler.py:50)\n"


def build(builder: Any, stacks: dict[str, list[str]], tp: int = 2, interval: float = 2.0,
          samples: list[dict[str, Any]] | None = None) -> Any:
    builder.add(host="d", role="decode", port=2, tp=tp,
                samples=[FROZEN] * 3 if samples is None else samples, stacks=stacks,
                stack_interval=interval)
    return analyze(load_capture(builder.write()))


def test_two_ranks_in_different_collectives_name_the_follower(builder: Any) -> None:
    # 3 dumps spanning 10 s: persistent enough to call it stuck (issue #14)
    a = build(builder, {"TP0": [dump(1, "sglang::scheduler_TP0", BROADCAST)] * 3,
                        "TP1": [dump(2, "sglang::scheduler_TP1", ALL_REDUCE)] * 3}, interval=5.0)
    out = [f for f in a.findings if f.key == "RANK_OUTLIER"]
    assert len(out) == 1
    assert "rank TP1" in out[0].title and out[0].severity == "critical" and out[0].wedge
    assert "ALL_RANKS_STUCK" not in [f.key for f in a.findings]
    assert [f.key for f in a.findings].index("RANK_OUTLIER") < \
        [f.key for f in a.findings].index("REQUESTS_FROZEN")


def test_majority_decides_with_four_ranks(builder: Any) -> None:
    stacks = {f"TP{i}": [dump(10 + i, f"sglang::scheduler_TP{i}", ALL_REDUCE)] * 2
              for i in range(4)}
    stacks["TP2"] = [dump(12, "sglang::scheduler_TP2", BROADCAST)] * 2
    a = build(builder, stacks, tp=4)
    out = [f for f in a.findings if f.key == "RANK_OUTLIER"]
    assert [f.title.split("rank ")[1].split()[0] for f in out] == ["TP2"]
    assert "majority (3/4 ranks)" in " ".join(str(e) for e in out[0].evidence)


def test_a_moving_rank_is_not_an_outlier(builder: Any) -> None:
    moved = dump(2, "sglang::scheduler_TP1", ALL_REDUCE.replace(":21", ":22"))
    a = build(builder, {"TP0": [dump(1, "sglang::scheduler_TP0", RECV)] * 2,
                        "TP1": [dump(2, "sglang::scheduler_TP1", ALL_REDUCE), moved]})
    assert "RANK_OUTLIER" not in [f.key for f in a.findings]


POLL = ("    MooncakeKVReceiver.poll (sglang/srt/disaggregation/mooncake/conn.py:39)\n"
        "    DecodeTransferQueue.pop_transferred (sglang/srt/disaggregation/decode.py:30)\n")


def test_ranks_of_one_loop_caught_in_different_phases_are_not_outliers(builder: Any) -> None:
    """Seen on the lab's transfer-stuck: TP1 in the KV poll twice, TP0 in the poll then in
    recv_requests. TP0 was in TP1's very stack one dump earlier, so TP1 is no odd one out."""
    a = build(builder, {"TP0": [dump(1, "sglang::scheduler_TP0", POLL), dump(1, "sglang::scheduler_TP0", RECV)],
                        "TP1": [dump(2, "sglang::scheduler_TP1", POLL)] * 2})
    assert "RANK_OUTLIER" not in [f.key for f in a.findings]
    b = build(builder, {"TP0": [dump(1, "sglang::scheduler_TP0", RECV)] * 2,
                        "TP1": [dump(2, "sglang::scheduler_TP1", POLL)] * 2})
    assert "RANK_OUTLIER" in [f.key for f in b.findings]  # never seen there: still the suspect


def test_idle_difference_is_not_an_outlier(builder: Any) -> None:
    a = build(builder, {"TP0": [dump(1, "sglang::scheduler_TP0", RECV)] * 2,
                        "TP1": [dump(2, "sglang::scheduler_TP1",
                                     "    time.sleep (<built-in>)\n")] * 2})
    assert "RANK_OUTLIER" not in [f.key for f in a.findings]


def test_all_ranks_in_one_collective(builder: Any) -> None:
    a = build(builder, {f"TP{i}": [dump(i + 1, f"sglang::scheduler_TP{i}", ALL_REDUCE)] * 3
                        for i in range(2)}, interval=5.0)
    stuck = [f for f in a.findings if f.key == "ALL_RANKS_STUCK"]
    assert len(stuck) == 1 and "TP0, TP1" in stuck[0].title
    assert "_wait_for_peers" in stuck[0].title and stuck[0].wedge
    assert "RANK_OUTLIER" not in [f.key for f in a.findings]


def test_pyspy_permission_failure_is_reported_with_fix(builder: Any) -> None:
    err = ("Permission Denied: Try running again with elevated permissions by going "
           "'sudo env \"PATH=$PATH\" !!'\n")
    s = builder.add(host="d", role="decode", port=2, samples=[FROZEN] * 3)
    path = builder.write()
    import json

    m = json.loads((path / "manifest.json").read_text())
    disc = json.loads((path / "parsed/d/discovery.json").read_text())
    pid = disc["processes"][1]["pid"]
    (path / "raw/d/pyspy.fail.txt").write_text(err)
    m["results"].append({"host": "d", "source": "pyspy", "key": "pyspy.fail", "argv": ["x"],
                         "url": None, "exit_status": 1, "duration_s": 0.1, "started_at": 1.0,
                         "timed_out": False, "truncated": False, "bytes": len(err),
                         "sha256": None, "path": "raw/d/pyspy.fail.txt", "error": None,
                         "stderr": err, "target": {"pid": pid}})
    (path / "manifest.json").write_text(json.dumps(m))
    assert s.role == "decode"
    a = analyze(load_capture(path))
    f = next(f for f in a.findings if f.key == "PYSPY_UNAVAILABLE" and f.severity == "warning")
    assert "permission" in f.title
    assert "CAP_SYS_PTRACE" in f.next_step or "root" in f.next_step


def test_a_py_spy_failure_alone_does_not_degrade_the_verdict(builder: Any) -> None:
    """The cluster progresses; only our stack collection failed: HEALTHY, with the gap listed."""
    import json

    moving = [{"sglang:generation_tokens_total": 100 * i, "sglang:num_running_reqs": 3} for i in range(1, 4)]
    builder.add(host="d", role="decode", port=2, samples=moving)
    path = builder.write()
    m = json.loads((path / "manifest.json").read_text())
    pid = json.loads((path / "parsed/d/discovery.json").read_text())["processes"][1]["pid"]
    err = "Error: Failed to suspend process\n"
    (path / "raw/d/pyspy.fail.txt").write_text(err)
    m["results"].append({"host": "d", "source": "pyspy", "key": "pyspy.fail", "argv": ["x"], "url": None,
                         "exit_status": 1, "duration_s": 0.1, "started_at": 1.0, "timed_out": False,
                         "truncated": False, "bytes": len(err), "sha256": None, "path": "raw/d/pyspy.fail.txt",
                         "error": None, "stderr": err, "target": {"pid": pid}})
    (path / "manifest.json").write_text(json.dumps(m))
    a = analyze(load_capture(path))
    assert ("PYSPY_UNAVAILABLE", "warning") in [(f.key, f.severity) for f in a.findings]
    assert a.verdict == "HEALTHY", a.summary
