"""The rules beneath SGLang, on field artifacts read as `triage` reads them and on bundles:
each reading reaches its finding (key, severity, the rank or device it names), controls stay
quiet, and the cross-rank reading spans files and hosts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Finding
from pdforensics.analysis.summary_md import BundleFacts, markdown_summary
from pdforensics.triage.run import triage_paths
from pdforensics.views.loaded import load_capture
from pdforensics.views.window import Since

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
FAMILIES = ("nccl", "kernel", "gdb", "flight_recorder", "pyspy_top", "load", "transfer_engine")


def _art(family: str, slug: str) -> str:
    return str(next(p for p in (FIELD / family).glob(slug + ".*") if not p.name.endswith(".meta.json")))


def _found(*paths: str) -> list[Finding]:
    a = triage_paths(list(paths)).analysis
    assert a is not None
    return list(a.findings)


def _one(findings: list[Finding], key: str) -> Finding:
    got = [f for f in findings if f.key == key]
    assert len(got) == 1, [f.key for f in findings]
    return got[0]


def _controls() -> list[str]:
    out = []
    for fam in FAMILIES:
        for meta in sorted((FIELD / fam).glob("*.meta.json")):
            side = json.loads(meta.read_text())
            if side["expect"].get("reading", {}).get("control"):
                out.append(_art(fam, meta.name[: -len(".meta.json")]))
    return out


#: controls no reader can read yet (known_gaps.json "read"): nothing is analysed, so nothing
#: can alarm either
_UNREAD = {k for k, v in json.loads((FIELD / "known_gaps.json").read_text()).items() if "read" in v}


@pytest.mark.parametrize("path", _controls(), ids=lambda p: Path(p).stem)
def test_controls_get_no_critical_finding_and_no_wedge(path: str) -> None:
    a = triage_paths([path]).analysis
    if f"{Path(path).parent.name}/{Path(path).name}" in _UNREAD:
        assert a is None  # a known gap: when it is read, this test reads its verdict
        return
    assert a is not None and a.verdict != "WEDGED"
    assert not [f.key for f in a.findings if f.severity == "critical"]


def test_ranks_in_one_collective_time_out_and_nobody_is_named() -> None:
    f = _one(_found(_art("nccl", "basicsr-737-watchdog-allreduce-3-ranks")), "NCCL_COLLECTIVE_TIMEOUT")
    assert f.severity == "critical" and f.wedge and "no rank stands out" in f.title
    assert "ALLREDUCE at SeqNum 808" in f.title and "rank(s) 0, 1, 2" in f.title


def _rank_log(tmp_path: Path, rank: int, seq: int, enq: int, done: int) -> str:
    """One rank's log, in torch 2.x's format (the lines of basicsr-737 with this rank's numbers)."""
    src = Path(_art("nccl", "basicsr-737-watchdog-allreduce-3-ranks")).read_text().splitlines()[:2]
    text = "\n".join(src).replace("rank1]", f"rank{rank}]").replace("Rank 1]", f"Rank {rank}]")
    text = text.replace("SeqNum=808", f"SeqNum={seq}").replace("at work: 808", f"at work: {seq}")
    text = text.replace("enqueued NCCL work: 811", f"enqueued NCCL work: {enq}")
    text = text.replace("completed NCCL work: 807", f"completed NCCL work: {done}")
    p = tmp_path / f"rank{rank}.log"
    p.write_text(text + "\n")
    return str(p)


def test_the_rank_behind_is_named_across_the_files_of_each_rank(tmp_path: Path) -> None:
    paths = [_rank_log(tmp_path, 0, 808, 811, 807), _rank_log(tmp_path, 1, 808, 811, 807),
             _rank_log(tmp_path, 2, 806, 811, 805)]
    f = _one(_found(*paths), "NCCL_COLLECTIVE_TIMEOUT")
    assert "Rank 2 is behind" in f.title and f.rank == 6
    assert any("victims" in str(e) and "Rank 0" in str(e) for e in f.evidence)


def test_a_rank_that_never_joined_is_missing_from_the_collective(tmp_path: Path) -> None:
    paths = [_rank_log(tmp_path, 0, 57, 57, 56), _rank_log(tmp_path, 1, 57, 57, 56),
             _rank_log(tmp_path, 3, 56, 56, 56)]
    f = _one(_found(*paths), "RANK_MISSING_FROM_COLLECTIVE")
    assert "Rank 3 never joined collective 57" in f.title and f.wedge


def test_flight_recorder_dumps_of_two_ranks_name_the_missing_one() -> None:
    fs = _found(_art("flight_recorder", "gen-torch213-gloo-fr-rank0-json"),
                _art("flight_recorder", "gen-torch213-gloo-fr-rank1-json"))
    f = _one(fs, "RANK_MISSING_FROM_COLLECTIVE")
    assert "Rank 1 never joined collective 5 (gloo:all_reduce)" in f.title and "Rank 0" in f.title
    alone = _found(_art("flight_recorder", "gen-torch213-gloo-fr-rank0-pickle"))
    assert not [x for x in alone if x.key == "RANK_MISSING_FROM_COLLECTIVE"]


def test_ras_ranks_ahead_are_reported_not_blamed() -> None:
    fs = _found(_art("nccl", "nccl-1911-ras-mismatch-two-ranks-ahead"))
    assert not [x for x in fs if x.key == "RANK_MISSING_FROM_COLLECTIVE"]
    f = _one(fs, "NCCL_RAS_REPORT")
    assert any("not stragglers" in str(e) and "Rank 12" in str(e) for e in f.evidence)
    fs = _found(_art("nccl", "nccl-1762-ras-incomplete-outlier-node"))
    assert not [x for x in fs if x.key == "RANK_MISSING_FROM_COLLECTIVE"]
    assert any("contradicts itself" in str(e) for e in _one(fs, "NCCL_RAS_REPORT").evidence)


def test_a_stuck_watchdog_names_its_rank() -> None:
    f = _one(_found(_art("nccl", "vlm-r1-257-watchdog-heartbeat-stuck-wrapped")), "NCCL_WATCHDOG_STUCK")
    assert f.severity == "critical" and "Rank 6" in f.title


def test_nccl_network_errors() -> None:
    f = _one(_found(_art("nccl", "nccl-562-ibv-create-qp-failed-init")), "NCCL_NETWORK_ERROR")
    assert "connection set-up failed" in f.title and f.severity == "critical"
    f = _one(_found(_art("nccl", "nccl-928-ib-completion-error4-three-hosts")), "NCCL_NETWORK_ERROR")
    assert "H100-1, H100-2, H100-5" in f.title


def test_xid_by_class_and_the_gpu_that_is_gone() -> None:
    fs = _found(_art("kernel", "akash-209-xid79-dmesg-T-nvidia-smi-unknown"))
    lost = _one(fs, "GPU_LOST")
    assert lost.severity == "critical" and "PCI:0000:a1:00" in lost.title and not lost.wedge
    xid = _one(fs, "GPU_XID")
    assert "Xid 79 (bus:" in xid.title and "RESTART_BM" in xid.next_step
    fs = _found(_art("kernel", "dxvk-1027-xid31-then-xid13-xid32"))
    assert sorted(f.subject or "" for f in fs if f.key == "GPU_XID") == [
        "dxvk-1027-xid31-then-xid13-xid32.log Xid 13", "dxvk-1027-xid31-then-xid13-xid32.log Xid 31",
        "dxvk-1027-xid31-then-xid13-xid32.log Xid 32"]
    f = _one(_found(_art("kernel", "ml-engineering-xid63-row-remapper")), "GPU_XID")
    assert f.severity == "info"  # a row marked for remapping: no crash cause
    f = _one(_found(_art("kernel", "open-gpu-1150-xid45-caused-by-xid149-145")), "GPU_XID")
    assert f.severity == "info" and "caused by previous Xid 145, 149" in f.title


def test_pcie_aer_and_the_oom_killer() -> None:
    fs = _found(_art("kernel", "gpu-burn-1-aer-surprise-down-then-xid79"))
    aer = _one(fs, "PCIE_AER")
    assert aer.severity == "critical" and "1 uncorrected" in aer.title
    oom = _one(_found(_art("kernel", "qaconv-19-oom-python-then-invoker-trace")), "HOST_OOM_KILL")
    assert oom.severity == "warning" and "698405 (python)" in oom.title


def test_transfer_engine_errors_on_their_stage(tmp_path: Path) -> None:
    f = _one(_found(_art("transfer_engine", "mooncake-602-tcp-writebody-bad-address-vram")),
             "TRANSFER_ENGINE_ERROR")
    assert "breaks kv_send" in f.title and "Bad address" in f.title and "GPU memory" in f.next_step
    decode = tmp_path / "decode-1.log"
    decode.write_text(Path(_art("transfer_engine", "vllm-ascend-9747-tcp-writebody-readbody-eof")).read_text())
    f = _one(_found(str(decode)), "TRANSFER_ENGINE_ERROR")
    assert "breaks decode_transfer_wait" in f.title
    assert any("(consequence)" in str(e.source) for e in f.evidence if not isinstance(e, str))


def test_an_nccl_kernel_on_the_gpu_waits_for_its_peers() -> None:
    f = _one(_found(_art("gdb", "nccl-558-cuda-gdb-info-cuda-threads-prims-ll")), "KERNEL_WAITS_ON_PEERS")
    assert f.severity == "warning" and "waiting for their peers" in f.title


def test_the_findings_reach_the_markdown_summary() -> None:
    a = triage_paths([_art("kernel", "akash-209-xid79-dmesg-T-nvidia-smi-unknown"),
                      _art("nccl", "basicsr-737-watchdog-allreduce-3-ranks")]).analysis
    assert a is not None
    md = markdown_summary(a, BundleFacts("triage"), top=5)
    assert "`GPU_LOST`" in md and "`NCCL_COLLECTIVE_TIMEOUT`" in md


def test_from_a_bundle_the_kernel_log_and_a_servers_log(builder: Any) -> None:
    text = Path(_art("nccl", "basicsr-737-watchdog-allreduce-3-ranks")).read_text()
    builder.add(host="d", role="decode", port=2, samples=[{"sglang:generation_tokens_total": 5}] * 3,
                log=text)
    builder.kernel["d"] = Path(_art("kernel", "akash-209-xid79-dmesg-T-nvidia-smi-unknown")).read_text()
    root = builder.write()
    # the Xid is dated April 2024, the capture 2027: history, reported as information only and
    # not read by the diagnosis (issue 33)
    a = analyze(load_capture(root))
    [old] = [f for f in a.findings if f.key == "GPU_XID"]
    assert old.severity == "info" and "before the evidence window" in old.title, old
    assert a.window is not None
    assert any("Xid 79" in h for h in a.window.history), a.window.history
    assert any("line 8: gpu_lost 0000:a1:00" in h for h in a.window.history), a.window.history
    assert a.diagnosis is not None
    assert not [c for c in a.diagnosis.clues if "fallen off the bus" in c.text], a.diagnosis.clues
    # a window opened back to it (--since 2024-01-01) judges it again
    a = analyze(load_capture(root, since=Since("2024-01-01", epoch=1_704_067_200.0)))
    keys = {f.key for f in a.findings}
    assert {"NCCL_COLLECTIVE_TIMEOUT", "GPU_LOST", "GPU_XID"} <= keys
    assert next(f for f in a.findings if f.key == "GPU_XID").severity == "critical"
    assert a.diagnosis is not None and [c for c in a.diagnosis.clues if "fallen off the bus" in c.text]
    f = next(f for f in a.findings if f.key == "NCCL_COLLECTIVE_TIMEOUT")
    assert any(not isinstance(e, str) and e.path and str(e).split(": ", 1)[1].startswith(f"{e.path}:1 ")
               for e in f.evidence)


def test_the_findings_reach_the_html_report(builder: Any) -> None:
    from pdforensics.report.write import write_report

    text = Path(_art("nccl", "basicsr-737-watchdog-allreduce-3-ranks")).read_text()
    builder.add(host="d", role="decode", port=2, samples=[{"sglang:generation_tokens_total": 5}] * 3,
                log=text)
    # its dmesg -T stamps moved into the capture's window (5 min before it), so the Xid is judged
    text = Path(_art("kernel", "akash-209-xid79-dmesg-T-nvidia-smi-unknown")).read_text()
    builder.kernel["d"] = text.replace("[Fri Apr  5 21:29:39 2024]", "[Fri Jan 15 07:55:00 2027]")
    html = write_report(builder.write()).read_text()
    for key in ("NCCL_COLLECTIVE_TIMEOUT", "GPU_LOST", "GPU_XID"):
        assert key in html, key
    assert "fallen off the bus" in html


def test_the_diagnosis_names_the_rank_read_across_files(tmp_path: Path) -> None:
    paths = [_rank_log(tmp_path, 0, 808, 811, 807), _rank_log(tmp_path, 1, 808, 811, 807),
             _rank_log(tmp_path, 2, 806, 811, 805)]
    d = triage_paths(paths).analysis.diagnosis  # type: ignore[union-attr]
    assert d is not None and d.side == "collective" and d.suspect == "Rank 2" and d.wedge
    fr = triage_paths([_art("flight_recorder", "gen-torch213-gloo-fr-rank0-pickle"),
                       _art("flight_recorder", "gen-torch213-gloo-fr-rank1-json")]).analysis
    assert fr is not None and fr.diagnosis is not None and fr.diagnosis.suspect == "Rank 1"


def test_the_diagnosis_of_one_file_beneath_sglang() -> None:
    def diag(family: str, slug: str):  # type: ignore[no-untyped-def]
        a = triage_paths([_art(family, slug)]).analysis
        assert a is not None and a.diagnosis is not None
        return a.diagnosis

    d = diag("kernel", "gpu-burn-1-aer-surprise-down-then-xid79")
    assert (d.side, d.suspect, d.wedge) == ("gpu", "PCI:0000:02:00", False)
    assert any("Surprise Down" in c.text for c in d.causes)
    assert any("79, GPU has fallen off the bus." in c.text for c in d.consequences)
    d = diag("gdb", "gen-gdb13-thread-apply-all-bt-recv-lock")
    assert d.suspect == "LWP 24735" and d.wedge
    d = diag("transfer_engine", "vllm-ascend-9747-tcp-writebody-readbody-eof")
    assert (d.stage, d.side) == ("kv_send", "transfer_engine")
    assert any("End of file (value: 2)" in c.text for c in d.consequences)
    d = diag("nccl", "nccl-1911-ras-mismatch-two-ranks-ahead")
    assert d.suspect is None and d.side == "collective" and d.wedge


def test_a_bundles_kernel_log_reaches_the_diagnosis(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[{"sglang:generation_tokens_total": 5}] * 3)
    builder.kernel["d"] = Path(_art("kernel", "gpu-burn-1-aer-surprise-down-then-xid79")).read_text()
    a = analyze(load_capture(builder.write()))
    assert a.diagnosis is not None
    assert any(c.key == "PCIE_AER" and c.source.endswith("kernel_log.txt") for c in a.diagnosis.clues)


def test_flight_recorder_dumps_from_before_the_window_are_history(builder: Any) -> None:
    """Two ranks' dumps of 2026-12-04 (their entries' time_created_ns) left on a host captured
    in 2027: an earlier incident's, listed as history and compared by no rule (issue 33); a
    window opened back to them judges them again."""
    builder.add(host="d", role="decode", port=2, samples=[{"sglang:generation_tokens_total": 5}] * 3)
    for rank in (0, 1):
        data = Path(_art("flight_recorder", f"gen-torch213-gloo-fr-rank{rank}-json")).read_bytes()
        builder.fr.append(("d", f"/tmp/fr/nccl_trace_rank_{rank}", data))
    root = builder.write()
    cap = load_capture(root)
    [host] = cap.hosts
    assert not host.flight_recorder and sorted(-1 if d.rank is None else d.rank for _p, d in host.fr_history) == [0, 1]
    a = analyze(cap)
    assert "RANK_MISSING_FROM_COLLECTIVE" not in {f.key for f in a.findings}
    assert a.window is not None and sum("Flight Recorder dump" in h for h in a.window.history) == 2
    assert a.diagnosis is None or not [c for c in a.diagnosis.clues if "flight_recorder" in c.source]
    a = analyze(load_capture(root, since=Since("2026-12-04", epoch=1_796_342_400.0)))
    [f] = [f for f in a.findings if f.key == "RANK_MISSING_FROM_COLLECTIVE"]
    assert f.severity == "critical" and f.suspect == "Rank 1", f.title
    assert a.diagnosis is not None and a.diagnosis.suspect == "Rank 1"
