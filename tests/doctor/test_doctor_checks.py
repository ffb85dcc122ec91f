"""doctor's judgements on small inputs: safeguards fallback, attach facts, GPU rows, probe
JSON, the report's summary and text, readiness changes between two bundles."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pdforensics.catalog.safeguards import judge_safeguards
from pdforensics.diff.compare import Change
from pdforensics.diff.readiness import readiness_rows
from pdforensics.doctor.checks_gpu import gpu_rows
from pdforensics.doctor.checks_server import _first_stamp
from pdforensics.doctor.checks_stacks import _attach
from pdforensics.doctor.model import CLUSTER, THIS_MACHINE, DoctorReport, fail, ok, ordered, warn
from pdforensics.doctor.probes import probe_json
from pdforensics.doctor.safeguards_check import STATUS
from pdforensics.doctor.stored import DOCTOR_FILE, read_doctor, write_doctor
from pdforensics.doctor.text import format_report

ARGV = ["python3", "-m", "sglang.launch_server", "--disaggregation-mode", "prefill",
        "--watchdog-timeout", "300"]


def _states(env: dict[str, str], argv: list[str] = ARGV) -> dict[str, str]:
    return {s.key: s.state for s in judge_safeguards("0.5.23", argv, env)}


def test_doctor_maps_the_catalog_judge_on_pd_timeouts_and_watchdog() -> None:
    assert _states({})["pd_bootstrap_timeout"] == "ok"  # unset: sglang's default
    assert _states({"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "100000"})["pd_bootstrap_timeout"] == "too_long"
    assert _states({"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "inf"})["pd_waiting_timeout"] == "disabled"
    assert _states({"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "soon"})["pd_waiting_timeout"] == "unknown"
    assert _states({}, [*ARGV, "--watchdog-timeout", "86400"])["watchdog_timeout"] == "too_long"
    [sg] = [s for s in judge_safeguards(None, ARGV, {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "100000"})
            if s.key == "pd_bootstrap_timeout"]
    assert sg.fix is not None and sg.fix.startswith("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300")
    assert STATUS["too_long"] == STATUS["disabled"] == "fail" and STATUS["unarmed"] == "warn"


def _doc(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"uid": 0, "cap_sys_ptrace": True, "ptrace_scope": "1",
                               "server_uids": [0], "dump": {"ok": True}}
    return {**base, **kw}


def test_attach_facts_decide_before_the_throwaway_dump() -> None:
    assert _attach("h", _doc(), []).status == "ok"
    other = _attach("h", _doc(uid=1001, cap_sys_ptrace=False, ptrace_scope="0"), [])
    assert other.status == "fail" and "uid 0" in other.evidence and "sudo = true" in other.fix
    scope1 = _attach("h", _doc(uid=1001, cap_sys_ptrace=False, server_uids=[1001]), [])
    assert scope1.status == "fail" and "own children" in scope1.evidence
    assert _attach("h", _doc(ptrace_scope="3"), []).status == "fail"
    boxed = _attach("h", _doc(dump={"ok": False, "err": "Permission denied"}), ["/.dockerenv"])
    assert boxed.status == "fail" and "SYS_PTRACE" in boxed.fix and "Permission denied" in boxed.evidence


def test_gpu_rows_and_log_stamps() -> None:
    assert gpu_rows("0, 550.54.15, Enabled\n1, 550.54.15, Disabled\n") == [
        ("0", "550.54.15", "Enabled"), ("1", "550.54.15", "Disabled")]
    assert gpu_rows("No devices were found\n") == []
    assert _first_stamp("junk\n[2026-01-02 03:04:05] Server started\n") is not None
    assert _first_stamp("no dates here") is None


@given(st.text())
def test_probe_readers_never_crash(text: str) -> None:
    doc = probe_json(text)
    assert doc is None or isinstance(doc, dict)
    assert all(len(r) == 3 for r in gpu_rows(text))
    _first_stamp(text)


def _report() -> DoctorReport:
    return DoctorReport("lab", ordered([
        ok("ssh_login", "decode-0", "logged in"),
        fail("pyspy_present", "decode-0", "'py-spy' not found\x1b[2J", "install py-spy"),
        warn("request_logging", "decode-0", "off", "add --log-requests", subject="decode:30001"),
        ok("pd_page_size", CLUSTER, "agrees"),
        ok("disk_room", THIS_MACHINE, "9 GiB free", subject="bundles")]))


def test_summary_json_and_text() -> None:
    r = _report()
    assert not r.ready
    assert r.summary() == "1 of 5 checks would leave the next capture blind: pyspy_present (1 more warn)"
    assert [c.host for c in r.checks] == [THIS_MACHINE, "decode-0", "decode-0", "decode-0", CLUSTER]
    assert r.checks[1].key == "pyspy_present"  # fails first within a host
    again = DoctorReport.from_json(json.loads(json.dumps(r.to_json())))
    assert again.checks == r.checks and again.to_json()["counts"] == {"ok": 3, "warn": 1, "fail": 1}
    text = format_report(r, verbose=False)
    assert "\x1b" not in text and "\\x1b[2J" in text  # host text cannot drive the terminal
    assert "ok   ssh_login" not in text and "FAIL pyspy_present" in text and "fix: install py-spy" in text
    assert text.rstrip().endswith(r.summary())
    assert "ok   ssh_login" in format_report(r, verbose=True)


def test_readiness_changes_between_two_bundles(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert readiness_rows(a, b) == []  # no doctor.json: nothing to compare
    write_doctor(a, DoctorReport("lab", (ok("pyspy_present", "decode-0", "found"),
                                         warn("curl", "decode-0", "absent", "install curl"))))
    write_doctor(b, DoctorReport("lab", (fail("pyspy_present", "decode-0", "gone", "install py-spy"),
                                         ok("curl", "decode-0", "found"),
                                         fail("sudo", "decode-0", "refused", "grant sudo"))))
    assert (b / DOCTOR_FILE).exists() and read_doctor(b) is not None
    got = {c.key: c for c in (Change(**row) for row in readiness_rows(a, b))}  # type: ignore[arg-type]
    assert got["pyspy_present"].before == "ok" and got["pyspy_present"].relevance == "high"
    assert got["pyspy_present"].note == "fix: install py-spy"
    assert got["curl"].relevance == "low" and got["curl"].note is None  # better
    assert got["sudo"].change == "added" and got["sudo"].before is None
    (b / DOCTOR_FILE).write_text("{not json")
    assert read_doctor(b) is None and readiness_rows(a, b) == []
