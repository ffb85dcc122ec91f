"""ss parsers on samples captured with the real ss (tests/data/ss_COMMANDS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.ss import (
    established_per_port,
    parse_endpoint,
    parse_established,
    parse_listening,
)

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.parametrize("name", ["ss_listen_H.txt", "ss_listen_header.txt"])
def test_listening(name: str) -> None:
    t = parse_listening((DATA / name).read_text())
    assert t.bad_lines == ()
    rows = {r.local.port: r for r in t.rows}
    assert t.ports() == (2024, 30001, 30002, 30003, 30004, 30005)
    assert rows[30001].local.addr == "127.0.0.1" and rows[30001].recv_q == 2
    assert rows[30001].send_q == 16 and rows[30001].state == "LISTEN"
    assert rows[30001].processes[0].name == "python" and rows[30001].processes[0].fd == 3
    assert rows[30003].local.addr == "::1" and rows[30003].peer.addr == "::"
    assert rows[30003].peer.port is None
    assert rows[30005].local.addr == "*" and rows[30004].local.addr == "0.0.0.0"
    assert rows[2024].processes == ()


def test_listening_shared_socket() -> None:
    (row,) = parse_listening((DATA / "ss_listen_shared_socket.txt").read_text()).rows
    assert [(p.name, p.fd) for p in row.processes] == [("sglang::schedul", 3), ("python", 3)]
    assert row.processes[0].pid != row.processes[1].pid


@pytest.mark.parametrize(
    "name", ["ss_established_H.txt", "ss_established_header.txt", "ss_established_p.txt"])
def test_established(name: str) -> None:
    t = parse_established((DATA / name).read_text())
    assert t.bad_lines == () and all(r.state is None for r in t.rows)
    assert established_per_port(t, (30001, 30002, 30003)) == {30001: 3, 30002: 1, 30003: 1}
    v6 = [r for r in t.rows if r.local.addr == "::1"]
    assert {r.local.port for r in v6} | {r.peer.port for r in v6} >= {30003}


def test_established_with_state_column() -> None:
    t = parse_established((DATA / "ss_all_H.txt").read_text())
    assert {r.state for r in t.rows} == {"ESTAB"} and len(t.rows) == 10
    assert len(t.by_port(30001)) == 3


def test_endpoints() -> None:
    assert parse_endpoint("[::1]:30000").addr == "::1"
    assert parse_endpoint("*:8000").port == 8000
    assert parse_endpoint("0.0.0.0:*").port is None
    assert parse_endpoint(":::22").addr == "::"
    assert parse_endpoint("127.0.0.53%lo:53").addr == "127.0.0.53"
    for bad in ("nonsense", "[::1]30000", "1.2.3.4:99999", "1.2.3.4:ssh"):
        with pytest.raises(ParseError):
            parse_endpoint(bad)


def test_bad_lines_and_errors() -> None:
    t = parse_listening("LISTEN 0 5 127.0.0.1:1 0.0.0.0:*\ngarbage here\n")
    assert len(t.rows) == 1 and t.bad_lines == ((2, "garbage here"),)
    with pytest.raises(ParseError, match="not ss output"):
        parse_listening("ss: command not found\n")
    assert parse_listening("").rows == () and parse_established("\n").rows == ()
