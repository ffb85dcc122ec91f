"""systemctl show parser on running, restarting and not-found samples."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.systemd import parse_environment, parse_systemctl_show, parse_timestamp

DATA = Path(__file__).resolve().parent.parent / "data"


def _t(*parts: int) -> float:
    return float(calendar.timegm(parts + (0, 0, 0)))


def test_running_unit() -> None:
    u = parse_systemctl_show((DATA / "systemd_show_running.txt").read_text())
    assert (u.id, u.load_state, u.active_state, u.sub_state) == (
        "sglang-prefill.service", "loaded", "active", "running")
    assert u.found and u.result == "success" and u.main_pid == 4101 and u.n_restarts == 0
    assert u.active_enter is not None and u.active_enter.raw == "Wed 2026-12-02 09:59:41 UTC"
    assert u.active_enter.epoch == _t(2026, 12, 2, 9, 59, 41)
    assert u.exec_main_start is not None and u.exec_main_start.epoch == _t(2026, 12, 2, 9, 59, 41)
    assert u.inactive_enter is None
    (cmd,) = u.exec_start
    assert cmd.path == "/opt/sglang/.venv/bin/python3"
    assert cmd.argv[:3] == ("/opt/sglang/.venv/bin/python3", "-m", "sglang.launch_server")
    assert "--disaggregation-mode" in cmd.argv and cmd.argv[-1] == "--enable-metrics"
    assert cmd.field("pid") == "4101" and cmd.field("status") == "0/0"
    assert cmd.field("start_time") == "[Wed 2026-12-02 09:59:41 UTC]"
    assert dict(u.environment) == {
        "CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "600",
        "HF_HOME": "/data/hf cache", "NCCL_DEBUG": "WARN"}
    assert u.fragment_path == "/etc/systemd/system/sglang-prefill.service"
    assert u.drop_in_paths == ("/etc/systemd/system/sglang-prefill.service.d/10-env.conf",
                               "/etc/systemd/system/sglang-prefill.service.d/20-limits.conf")
    assert u.get("MemoryCurrent") == "3127934976" and u.bad_lines == ()


def test_restarting_unit() -> None:
    u = parse_systemctl_show((DATA / "systemd_show_restarting.txt").read_text())
    assert (u.active_state, u.sub_state, u.result) == ("activating", "auto-restart", "exit-code")
    assert u.main_pid is None and u.n_restarts == 7
    assert u.inactive_enter is not None and u.inactive_enter.epoch == _t(2026, 12, 2, 10, 25, 31)
    assert u.exec_start[0].field("code") == "exited" and u.exec_start[0].field("status") == "1"
    assert u.drop_in_paths == () and dict(u.environment) == {"CUDA_VISIBLE_DEVICES": "2,3"}


def test_not_found_unit() -> None:
    u = parse_systemctl_show((DATA / "systemd_show_not_found.txt").read_text())
    assert u.load_state == "not-found" and not u.found
    assert u.active_state == "inactive" and u.sub_state == "dead"
    assert u.exec_start == () and u.fragment_path is None and u.active_enter is None
    assert (u.get("LoadError") or "").startswith("org.freedesktop.systemd1.NoSuchUnit")


def test_timestamps() -> None:
    assert parse_timestamp("") is None and parse_timestamp("n/a") is None
    assert parse_timestamp("@1764670828") == parse_timestamp("@1764670828")
    ts = parse_timestamp("@1764670828")
    assert ts is not None and ts.epoch == 1764670828.0
    cet = parse_timestamp("Wed 2026-12-02 11:20:28 CET")
    assert cet is not None and cet.epoch == _t(2026, 12, 2, 10, 20, 28)
    odd = parse_timestamp("Wed 2026-12-02 11:20:28 XYZT")
    assert odd is not None and odd.epoch is None and odd.raw.endswith("XYZT")
    assert parse_environment('A=1 "B=x y" junk') == (("A", "1"), ("B", "x y"))


def test_bad_lines_and_errors() -> None:
    u = parse_systemctl_show("ActiveState=active\nthis is cut\nSubState=running\nLoadSt")
    assert u.active_state == "active" and u.sub_state == "running"
    assert u.bad_lines == ((2, "this is cut"), (4, "LoadSt"))
    with pytest.raises(ParseError, match="not systemctl show output"):
        parse_systemctl_show("Failed to connect to bus: No such file or directory\n")
    empty = parse_systemctl_show("")
    assert empty.id is None and empty.properties == () and not empty.found
