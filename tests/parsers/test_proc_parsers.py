"""ps and /proc parsers on real samples taken from the lab on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.parsers.nvml import parse_nvml
from pdforensics.parsers.proc import parse_cgroup_unit, parse_cmdline, parse_environ, parse_ps
from pdforensics.parsers.unitfile import parse_unit_files

DATA = Path(__file__).parent.parent / "data"


def test_ps_sample_has_lab_ranks() -> None:
    table = parse_ps((DATA / "proc_ps.txt").read_text())
    assert not table.bad_lines
    titles = [r.args for r in table.rows if r.args.startswith("sglang::")]
    assert "sglang::scheduler_TP0" in titles and "sglang::detokenizer" in titles
    server = next(r for r in table.rows if "--disaggregation-mode decode" in r.args)
    assert server.threads >= 1 and server.rss_kb > 0 and server.state in "RSD"


def test_ps_keeps_bad_lines_aside() -> None:
    table = parse_ps("  1  0 Ss 100 1 900 /sbin/init\ngarbage line\n")
    assert [r.pid for r in table.rows] == [1] and table.bad_lines == ("garbage line",)


def test_cmdline_and_environ_samples() -> None:
    argv = parse_cmdline((DATA / "proc_cmdline.bin").read_text())
    assert argv[1:3] == ("-m", "sglang.launch_server")
    assert "--disaggregation-mode" in argv
    env = dict(parse_environ((DATA / "proc_environ.bin").read_text()))
    assert env["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "300"


def test_environ_without_equals_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_environ("A=1\0broken\0")


def test_cgroup_unit() -> None:
    assert parse_cgroup_unit((DATA / "proc_cgroup_systemd.txt").read_text()) == \
        "sglang-decode.service"
    assert parse_cgroup_unit((DATA / "proc_cgroup.txt").read_text()) is None  # container
    v1 = "12:pids:/system.slice/x.service\n1:name=systemd:/system.slice/sglang-prefill.service\n"
    assert parse_cgroup_unit(v1) == "sglang-prefill.service"
    assert parse_cgroup_unit("0::/user.slice/user-0.slice/session-3.scope") is None


def test_unit_files_split_fragment_and_drop_ins() -> None:
    units = parse_unit_files((DATA / "systemd_cat_decode.txt").read_text())
    assert units.fragment is not None
    assert units.fragment.path == "/etc/systemd/system/sglang-decode.service"
    assert "ExecStart=" in units.fragment.text
    assert [d.path for d in units.drop_ins] == [
        "/etc/systemd/system/sglang-decode.service.d/override.conf"]


def test_nvml_report() -> None:
    r = parse_nvml((DATA / "nvml_h200.json").read_text())
    assert r.available and r.driver_version == "570.124.06" and len(r.gpus) == 2
    assert r.gpus[1].errors == (("throttle_reasons", "Not Supported"),)
    off = parse_nvml((DATA / "nvml_unavailable.json").read_text())
    assert not off.available and off.error


@settings(max_examples=2000, deadline=None)
@given(st.text())
def test_proc_parsers_never_crash(text: str) -> None:
    parse_ps(text)
    parse_cmdline(text)
    parse_cgroup_unit(text)
    parse_unit_files(text)
    for fn in (parse_environ, parse_nvml):
        try:
            fn(text)
        except ParseError:
            pass
