"""NCCL's own lines (WARN causes, the `-> code [Thread]` chains that follow them, healthy init)
and NCCL RAS reports (missing ranks, ranks ahead that are not stragglers, a report that
contradicts itself), on field artifacts."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.nccl_debug import ABORT, ERROR_CHAIN, IB_COMPLETION, IBV_CALL, INIT, MISMATCH, read_nccl_lines
from pdforensics.parsers.nccl_ras import parse_ras, read_ras

NCCL = Path(__file__).resolve().parent.parent / "data" / "field" / "nccl"


def _read(slug: str) -> str:
    return next(p for p in NCCL.glob(slug + ".*") if not p.name.endswith(".meta.json")).read_text()


def test_ib_completion_errors_and_the_end_of_each_error_chain() -> None:
    lines = read_nccl_lines(_read("nccl-1405-ib-completion-vendor-err-129-ipv6-gid"))
    assert [n.kind for n in lines] == [IB_COMPLETION, ERROR_CHAIN, IB_COMPLETION, ERROR_CHAIN,
                                       IB_COMPLETION, ERROR_CHAIN]
    assert lines[0].peer == "10.0.0.2<54862>" and lines[0].host == "kp-ddp-worker-0" and lines[0].dev == 4
    assert "status=12 opcode=0 len=0 vendor err 129 (Recv)" in lines[0].text
    assert lines[1].code == 6 and lines[1].text.endswith("proxy.cc:878 -> 6 [Progress Thread]")


def test_a_failed_verbs_call_is_connection_set_up() -> None:
    lines = read_nccl_lines(_read("nccl-562-ibv-create-qp-failed-init"))
    calls = [n for n in lines if n.kind == IBV_CALL]
    assert {n.call for n in calls} == {"ibv_create_qp"} and all(n.setup for n in calls)
    assert {n.dev for n in calls} == {4, 5, 6}
    assert any(n.kind == ERROR_CHAIN and "group.cc:72 -> 2 [Async thread]" in n.text for n in lines)


def test_mismatch_warnings_and_other_hosts_init_lines() -> None:
    lines = read_nccl_lines(_read("nccl-214-mismatched-collective-4-ranks"))
    assert [n.kind for n in lines].count(MISMATCH) == 4
    assert [n.host for n in lines if n.kind == INIT] == ["node-8x-v100-nvlink-2"] * 2


def test_a_pdsh_prefixed_collective_mismatch() -> None:
    lines = read_nccl_lines(_read("nccl-969-ib-collective-mismatch-proxy"))
    assert lines[0].kind == MISMATCH and lines[0].host == "host-1"
    assert lines[-1].kind == ERROR_CHAIN and lines[-1].code == 5


def test_abort_complete_of_another_rank_is_read() -> None:
    lines = read_nccl_lines(_read("funasr-2006-rank10-timeout-with-abort-complete"))
    assert [n.kind for n in lines] == [ABORT]


def test_healthy_init_holds_no_failure() -> None:
    for slug in ("nccl-1609-nvls-init-info-control", "pytorch-105287-init-connected-rings-control",
                 "nccl-tests-227-bootstrap-init-roce-control"):
        assert all(n.kind == INIT for n in read_nccl_lines(_read(slug))), slug


def test_ras_all_ok_names_nobody() -> None:
    rep = parse_ras(_read("nccl-1730-ras-ok-while-watchdog-times-out"))
    assert rep is not None and rep.ok and rep.processes == 256 and rep.version == "2.26.2"
    r = read_ras(rep)
    assert r.missing == r.behind == r.ahead == () and r.reliable


def test_ras_ranks_ahead_are_not_stragglers() -> None:
    rep = parse_ras(_read("nccl-1911-ras-mismatch-two-ranks-ahead"))
    assert rep is not None and rep.processes == 32
    (entry,) = rep.entries
    assert entry.op == "AllGather" and [(c.ranks, c.value, c.named) for c in entry.counts] == [
        (30, 640, ()), (2, 641, (12, 13))]
    r = read_ras(rep)
    assert r.behind == () and [a.split(" (")[0] for a in r.ahead] == ["Rank 12", "Rank 13"]


def test_ras_a_minority_behind_is_named() -> None:
    text = _read("nccl-1911-ras-mismatch-two-ranks-ahead").replace(
        "30 ranks have launched up to operation 640", "30 ranks have launched up to operation 642")
    r = read_ras(parse_ras(text))  # type: ignore[arg-type]
    assert [b.split(" (")[0] for b in r.behind] == ["Rank 12", "Rank 13"] and r.ahead == ()


def test_ras_that_contradicts_itself_is_not_reliable() -> None:
    rep = parse_ras(_read("nccl-1762-ras-incomplete-outlier-node"))
    assert rep is not None and rep.processes == 10 and rep.outlier_nodes == ("10.0.0.1",)
    assert [e.missing for e in rep.entries] == [1, 1, 255]
    r = read_ras(rep)
    assert "Rank 1 (#0-0 (b3398875b8b2a063))" in r.missing and not r.reliable


def test_text_without_ras_is_none() -> None:
    assert parse_ras(_read("basicsr-737-watchdog-allreduce-3-ranks")) is None
