"""How loose artifacts become services: scrapes of one server group, /server_info names the
role, logs and stacks join the service of their role, times come from the files."""

from __future__ import annotations

import json
from pathlib import Path

from pdforensics.triage.read import read_path, read_text
from pdforensics.triage.view import build_capture

DATA = Path(__file__).resolve().parent.parent / "data"


def _services(*paths: str):  # type: ignore[no-untyped-def]
    cap, notes = build_capture([read_path(str(DATA / p)) for p in paths])
    return list(cap.services()), notes, cap


def test_server_info_names_the_role_of_a_unified_labelled_scrape() -> None:
    metrics = (DATA / "prom_malformed_mix.txt").read_text()  # engine_type="unified"
    info = {"disaggregation_mode": "decode", "tp_size": 2, "dp_size": 1, "version": "0.5.4"}
    arts = [read_text("m.txt", metrics, len(metrics)),
            read_text("i.json", json.dumps(info), 10)]
    cap, _ = build_capture(arts)
    [svc] = list(cap.services())
    assert (svc.role, svc.tp_size, svc.version()) == ("decode", 2, "0.5.4")
    assert len(svc.metrics) == 1 and "server_info" in svc.fetches


def test_prefill_and_decode_scrapes_are_two_services_and_logs_split_by_writer() -> None:
    svcs, _, _ = _services("prom_sglang_prefill_healthy.txt", "prom_sglang_decode_wedged.txt",
                           "log_compose_sglang.txt")
    roles = sorted((s.role, s.kind) for s in svcs)
    assert roles == [("decode", "server"), ("prefill", "server"), ("router", "router")]
    by_role = {s.role: {h.key for h in s.log_hits} for s in svcs}
    assert "PREFILL_BOOTSTRAP_FAILED" in by_role["prefill"]
    assert "DECODE_TRANSFER_FAILED" in by_role["decode"]
    assert all(len(s.metrics) == 1 for s in svcs if s.kind == "server")


def test_watchdog_dumps_go_to_the_role_their_compose_service_names() -> None:
    svcs, _, cap = _services("prom_sglang_prefill_healthy.txt", "prom_sglang_decode_wedged.txt",
                             "watchdog_compose.log")
    decode = next(s for s in svcs if s.role == "decode")
    assert sorted(p.info.rank or "" for p in decode.ranks) == ["TP0", "TP1", "TP2", "TP3"]
    assert all(p.stacks[0].taken_at > 1.7e9 for p in decode.ranks)  # the watchdog's own time
    assert cap.started_at >= max(p.stacks[0].taken_at for p in decode.ranks)


def test_two_untimed_dumps_of_one_process_are_a_second_apart_and_say_so() -> None:
    svcs, notes, _ = _services("pyspy_subprocesses.txt", "pyspy_subprocesses_later.txt")
    [svc] = svcs
    times = {tuple(sd.taken_at for sd in p.stacks) for p in svc.processes}
    assert times == {(1.0, 2.0)}
    assert notes and "without a time inside" in notes[0]


def test_unreadable_artifacts_are_left_out() -> None:
    bad = read_text("x.txt", "nothing to see\n", 15)
    good = read_path(str(DATA / "pyspy_basic.txt"))
    cap, _ = build_capture([bad, good])
    assert not bad.usable and sum(len(h.processes) for h in cap.hosts) == 1


def test_a_gateway_scrape_is_the_router_even_with_its_workers_engine_labels() -> None:
    svcs, _, _ = _services("prom_router_gateway.txt")
    assert [(s.kind, s.role) for s in svcs] == [("router", "router")]
