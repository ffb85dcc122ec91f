"""The merge pass (analysis/merge.py) and LOG_SIGNATURE's one-line grouping, on small
synthetic bundles written through the real BundleWriter (tests/support/builder.py)."""

from __future__ import annotations

import time
from typing import Any

from pdforensics.analysis.engine import analysis_json, analyze, format_analysis_text
from pdforensics.analysis.findings import Finding
from pdforensics.analysis.merge import merge_findings
from pdforensics.analysis.result_json import analysis_from_json
from pdforensics.views.loaded import load_capture

GEN = "sglang:generation_tokens_total"
TRANSFER = "sglang:num_decode_transfer_queue_reqs"
PREALLOC = "sglang:num_decode_prealloc_queue_reqs"
INFLIGHT = "sglang:num_prefill_inflight_queue_reqs"
RECEIVER = "    MooncakeKVReceiver.poll (sglang/srt/disaggregation/mooncake/conn.py:39)\n"
LOOP = ("    Scheduler.event_loop_normal_disagg_decode (sglang/srt/managers/scheduler.py:124)\n"
        "    run_scheduler_process (sglang/srt/managers/scheduler.py:176)\n")


def frozen(**extra: object) -> dict[str, object]:
    return {GEN: 1000, "sglang:num_running_reqs": 5, **extra}


def moving(i: int) -> dict[str, object]:
    return {GEN: 1000 + 500 * i, "sglang:num_running_reqs": 5}


def dump(pid: int, rank: str) -> str:
    return (f"Process {pid}: sglang::scheduler_{rank}\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            f'Thread {pid} (idle): "MainThread"\n{RECEIVER}{LOOP}')


def frozen_hop(builder: Any, stacks: bool = False) -> Any:
    """decode: transfer 14 and prealloc 3 frozen; prefill: inflight 14 frozen."""
    builder.add(host="p", role="prefill", port=1, samples=[frozen(**{INFLIGHT: 14})] * 3)
    builder.add(host="d", role="decode", port=2,
                samples=[frozen(**{TRANSFER: 14, PREALLOC: 3})] * 3, stack_interval=5.0,
                stacks={r: [dump(10 + i, r)] * 3 for i, r in enumerate(("TP0", "TP1"))}
                if stacks else {})
    return analyze(load_capture(builder.write()))


def test_three_frozen_queues_of_one_hop_are_one_finding(builder: Any) -> None:
    a = frozen_hop(builder)
    keys = [f.key for f in a.findings]
    assert keys.count("DECODE_TRANSFER_STUCK") == 1
    assert "DECODE_PREALLOC_STUCK" not in keys and "PREFILL_INFLIGHT_STUCK" not in keys
    top = a.findings[0]
    assert top.key == "DECODE_TRANSFER_STUCK" and top.severity == "critical" and top.wedge
    assert top.merged == ("DECODE_PREALLOC_STUCK", "PREFILL_INFLIGHT_STUCK")
    assert top.title.startswith("KV hop frozen, no progress for ")
    assert "d decode:2 transfer queue 14, prealloc queue 3; p prefill:1 inflight queue 14" in top.title
    # every queue's own line first, then the rest; no line twice
    first = [str(e) for e in top.evidence[:3]]
    assert "num_decode_transfer_queue_reqs 14 → 14 → 14" in first[0]
    assert "num_decode_prealloc_queue_reqs 3 → 3 → 3" in first[1]
    assert "num_prefill_inflight_queue_reqs 14 → 14 → 14" in first[2]
    assert len(top.evidence) == len(set(top.evidence))
    assert a.verdict == "WEDGED" and a.summary.startswith("WEDGED: DECODE_TRANSFER_STUCK: KV hop")
    # the symptoms seen per server stay (other rules, other evidence)
    assert keys.count("REQUESTS_FROZEN") == 2
    assert "merged: DECODE_PREALLOC_STUCK, PREFILL_INFLIGHT_STUCK" in format_analysis_text(a)


def test_merged_keys_survive_analysis_json(builder: Any) -> None:
    a = frozen_hop(builder)
    doc = analysis_json(a)
    assert doc["findings"][0]["merged"] == ["DECODE_PREALLOC_STUCK", "PREFILL_INFLIGHT_STUCK"]
    assert doc["findings"][0]["subject"] == "d decode:2"
    back = analysis_from_json(doc)
    assert back.findings[0].merged == a.findings[0].merged
    assert back.findings == a.findings


def test_one_frozen_queue_is_left_alone(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[frozen(**{TRANSFER: 14})] * 3)
    a = analyze(load_capture(builder.write()))
    top = a.findings[0]
    assert top.key == "DECODE_TRANSFER_STUCK" and top.merged == ()
    assert top.title.startswith("d decode:2: the decode transfer queue has 14 requests")


def test_queues_constant_on_a_progressing_server_are_not_merged(builder: Any) -> None:
    """Info findings (constant queue, server moves) are separate facts, not one wedge."""
    builder.add(host="d", role="decode", port=2,
                samples=[{**moving(i), TRANSFER: 2, PREALLOC: 1} for i in range(3)])
    a = analyze(load_capture(builder.write()))
    info = [f for f in a.findings if f.key in ("DECODE_TRANSFER_STUCK", "DECODE_PREALLOC_STUCK")]
    assert len(info) == 2 and all(f.severity == "info" and f.merged == () for f in info)


def test_stacks_in_the_kv_receiver_sit_in_the_top_three(builder: Any) -> None:
    a = frozen_hop(builder, stacks=True)
    top3 = [f.key for f in a.findings[:3]]
    assert top3[0] == "DECODE_TRANSFER_STUCK", top3
    stuck = next(f for f in a.findings if f.key == "ALL_RANKS_STUCK")
    assert stuck.severity == "critical" and "MooncakeKVReceiver.poll" in stuck.title
    assert "ALL_RANKS_STUCK" in top3, [f.key for f in a.findings]


def test_signatures_matching_one_log_line_are_one_piece_of_evidence(builder: Any) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(1_800_000_000 - 5))
    # the line SGLang writes when a KV transfer times out (as the lab writes it)
    line = (f"[{stamp} TP0] Decode transfer failed for request rank=0 req.rid='d6d05c84' "
            "req.bootstrap_room=7534 with exception KVTransferError(bootstrap_room=7534): "
            "Request 7534 timed out after 300.0s in KVPoll.WaitingForInput\n")
    builder.add(host="d", role="decode", port=2, samples=[moving(i) for i in range(3)],
                log=line * 4)
    a = analyze(load_capture(builder.write()))
    sig = next(f for f in a.findings if f.key == "LOG_SIGNATURE")
    assert len(sig.evidence) == 1, [str(e) for e in sig.evidence]
    text = str(sig.evidence[0])
    assert text.count("Decode transfer failed for request") == 1
    keys = ("KV_WAITING_TIMEOUT", "DECODE_TRANSFER_FAILED", "KV_TRANSFER_ERROR")
    assert all(text.count(k) == 1 for k in keys), text  # every signature of the line, once
    assert all(k in sig.title for k in keys) and "x4" in sig.title, sig.title


def test_a_probe_hang_folds_into_a_critical_rank_outlier_of_the_same_server() -> None:
    probe = Finding("SCHEDULER_PROBE_HANG", "critical", "probe hangs", ("probe timed out",), "dump",
                    section="scheduler", subject="decode.30001")
    stuck = Finding("RANK_OUTLIER", "critical", "rank TP1 stuck", ("TP1 in broadcast",), "look",
                    section="ranks", subject="decode.30001")
    merged = merge_findings([probe, stuck])
    assert [f.key for f in merged] == ["RANK_OUTLIER"]
    assert merged[0].merged == ("SCHEDULER_PROBE_HANG",) and "probe timed out" in merged[0].evidence
    info = Finding("RANK_OUTLIER", "info", "odd rank", ("TP1 elsewhere",), "look",
                   section="ranks", subject="decode.30001")
    assert {f.key for f in merge_findings([probe, info])} == {"SCHEDULER_PROBE_HANG", "RANK_OUTLIER"}
    other = Finding("RANK_OUTLIER", "critical", "rank stuck", ("x",), "look",
                    section="ranks", subject="prefill.30000")
    assert {f.key for f in merge_findings([probe, other])} == {"SCHEDULER_PROBE_HANG", "RANK_OUTLIER"}
