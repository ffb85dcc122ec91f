"""Discovery of servers, ranks and routers from a real lab process table."""

from __future__ import annotations

from pathlib import Path

from pdforensics.catalog.cmdline import flag_value
from pdforensics.model import ServiceSpec
from pdforensics.parsers.proc import parse_ps
from pdforensics.sglang.discovery import classify, discover

DATA = Path(__file__).parent.parent / "data"


def test_classify() -> None:
    assert classify("sglang::scheduler_TP3") == ("scheduler", "TP3")
    assert classify("sglang::scheduler_DP1_TP3") == ("scheduler", "DP1_TP3")
    assert classify("sglang::detokenizer") == ("detokenizer", None)
    assert classify("/usr/bin/python3 -m sglang.launch_server --port 1") == ("server", None)
    assert classify("python -m sglang_router.launch_router --pd-disaggregation") == ("router", None)
    assert classify("/usr/local/bin/sgl-model-gateway --port 8000") == ("router", None)
    assert classify("grep sglang.launch_server") is None
    assert classify("vim sglang/launch_server.py") is None


def test_flag_value_forms() -> None:
    argv = ["x", "--port", "1", "--port=2", "--tp-size", "8"]
    assert flag_value(argv, "--port") == "2" and flag_value(argv, "--tp-size") == "8"
    assert flag_value(argv, "--nope") is None


def test_discover_lab_table() -> None:
    table = parse_ps((DATA / "proc_ps.txt").read_text())
    d = discover(table, now=1000.0)
    roles = sorted(s.role for s in d.services)
    assert "decode" in roles and "prefill" in roles and "router" in roles
    dec = next(s for s in d.services if s.role == "decode")
    assert dec.tp_size == 2 and dec.metrics_enabled and dec.address.startswith("127.")
    ranks = sorted(p.rank or "" for p in d.processes if p.root_pid == dec.root_pid
                   and p.kind == "scheduler")
    assert ranks == ["TP0", "TP1"]
    pre = next(s for s in d.services if s.role == "prefill")
    assert pre.bootstrap_port is not None


def test_declared_services_only_and_missing_ones_reported() -> None:
    table = parse_ps((DATA / "proc_ps.txt").read_text())
    dec = next(s for s in discover(table).services if s.role == "decode")
    d = discover(table, [ServiceSpec(role="decode", port=dec.port), ServiceSpec("prefill", 1)])
    assert [s.role for s in d.services] == ["decode", "prefill"]
    assert d.services[0].root_pid == dec.root_pid and d.services[1].root_pid is None
    assert d.missing == ("prefill:1",)
    assert {p.root_pid for p in d.processes} == {dec.root_pid}


def test_declared_port_found_through_listening_socket() -> None:
    table = parse_ps("10 1 S 5 1 1 /usr/bin/python3 -m sglang.launch_server --port 30000\n"
                     "11 10 S 5 1 1 sglang::scheduler_TP0\n")
    d = discover(table, [ServiceSpec("decode", 31000)], listen_pids={31000: {11}})
    assert d.services[0].root_pid == 10 and not d.missing


def test_classify_the_real_gateway() -> None:
    """smg's title replaces its command line; its console script and module run under python."""
    assert classify("smg::router") == ("router", None)
    assert classify("smg launch --pd-disaggregation --prefill http://p:30000 8998") == ("router", None)
    assert classify("/opt/venv/bin/python3 /opt/venv/bin/smg launch --port 8000") == ("router", None)
    assert classify("python -m smg.launch_router --pd-disaggregation") == ("router", None)
    assert classify("/opt/venv/bin/python3 /opt/venv/bin/pdforensics capture") is None


def test_titled_gateway_takes_its_address_from_its_listening_socket() -> None:
    """`smg::router` has no --host or --port left: the declared port's listener gives both."""
    table = parse_ps("40 1 S 5 1 1 smg::router\n")
    spec = ServiceSpec(role="router", port=8000, metrics_port=29000)
    d = discover(table, [spec], listen_pids={8000: {40}, 29000: {40}},
                 listen_addresses={8000: "127.0.0.2", 29000: "127.0.0.2"})
    (svc,) = d.services
    assert (svc.kind, svc.root_pid, svc.address, svc.port, svc.metrics_port) == (
        "router", 40, "127.0.0.2", 8000, 29000)


def test_a_router_whose_title_hid_its_flags_takes_its_ports_from_its_sockets() -> None:
    from pdforensics.sglang.discovery import _hidden_router_ports

    assert _hidden_router_ports(7, [7], {25049: {7}, 25050: {7}, 30001: {8}}, 30000, 29000) == (25049, 25050)
    assert _hidden_router_ports(7, [7, 9], {29000: {9}, 30000: {7}, 8080: {7}}, 30000, 29000) == (30000, 29000)
    assert _hidden_router_ports(7, [7], {29000: {7}, 40000: {7}}, 30000, 29000) == (40000, 29000)
    assert _hidden_router_ports(7, [7], {25049: {7}}, 30000, 29000) == (30000, 29000)  # one socket: no guess
