"""`pdforensics watch` through click: help, bad options, unreachable servers."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from pdforensics.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_file(tmp_path: Path, port: int) -> Path:
    p = tmp_path / "cluster.toml"
    p.write_text(f'[cluster]\nname = "gone"\n[[hosts]]\nname = "decode-0"\naddress = "local"\n'
                 f'[[hosts.services]]\nrole = "decode"\nport = {port}\n'
                 f'[[hosts]]\nname = "router-0"\naddress = "local"\n'
                 f'[[hosts.services]]\nrole = "router"\nport = {port}\nmetrics_port = {port}\n')
    return p


def test_help_names_the_options() -> None:
    res = CliRunner().invoke(main, ["watch", "--help"])
    assert res.exit_code == 0
    for opt in ("--every", "--for", "--cooldown", "--on-capture", "--metrics-port", "--prometheus",
                "--history", "--store"):
        assert opt in res.output


def test_capture_help_has_prometheus_history() -> None:
    res = CliRunner().invoke(main, ["capture", "--help"])
    assert res.exit_code == 0 and "--prometheus" in res.output and "--history" in res.output


def test_bad_duration_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["watch", "-c", str(cluster_file(tmp_path, 1)), "--for", "soon"])
    assert res.exit_code == 2 and "bad duration" in res.output


def test_empty_hook_is_a_config_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["watch", "-c", str(cluster_file(tmp_path, 1)), "--on-capture", " ",
                                    "--store", str(tmp_path / "store"), "--max-polls", "1"])
    assert res.exit_code == 2 and "--on-capture needs a command" in res.output


def test_unreachable_servers_are_reported_not_fatal(tmp_path: Path) -> None:
    port = _closed_port()
    res = CliRunner().invoke(main, ["watch", "-c", str(cluster_file(tmp_path, port)), "--every", "0.2",
                                    "--max-polls", "3", "--json", "--store", str(tmp_path / "store")])
    assert res.exit_code == 0, res.output
    events = [json.loads(line) for line in res.output.splitlines()]
    polls = [e for e in events if e["event"] == "poll"]
    assert len(polls) == 3
    assert all(p["failed"] == 3 and p["endpoints"] == 3 for p in polls)
    assert any("Connection refused" in err for err in polls[0]["errors"])
    assert not [e for e in events if e["event"].startswith("capture")]
    assert not (tmp_path / "store" / "bundles").exists()


def test_metrics_port_in_use_is_an_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        res = CliRunner().invoke(main, ["watch", "-c", str(cluster_file(tmp_path, 1)), "--metrics-port",
                                        str(busy), "--metrics-addr", "127.0.0.1", "--max-polls", "1",
                                        "--store", str(tmp_path / "store")])
    assert res.exit_code == 1 and "cannot serve metrics" in res.output
