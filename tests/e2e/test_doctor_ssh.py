"""`pdforensics doctor` over real sshd: the healthy lab passes; each degraded setup fails the
right check with the right fix; `snapshot --doctor` + `diff` show readiness getting worse."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pdforensics.errors import ExitStatus
from pdforensics.lab import lab_down, lab_up
from tests.e2e.faultkit import CLI
from tests.support import ports

pytestmark = [pytest.mark.e2e, pytest.mark.lab]
LOGIN_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/games"  # sshd's default PATH for a login


def doctor(cluster: Path, *args: str) -> tuple[int, str]:
    r = subprocess.run([*CLI, "doctor", "-c", str(cluster),
                        "--deadline", "30s", *args], capture_output=True, text=True, timeout=90)
    return r.returncode, r.stdout


def doctor_json(cluster: Path) -> tuple[int, dict[str, Any]]:
    code, out = doctor(cluster, "--json")
    return code, json.loads(out)


def checks(doc: dict[str, Any], key: str, host: str | None = None) -> list[dict[str, Any]]:
    return [c for c in doc["checks"] if c["key"] == key and (host is None or c["host"] == host)]


def edited(cluster: Path, out: Path, host: str, drop: tuple[str, ...] = (), add: tuple[str, ...] = ()) -> Path:
    """A copy of the lab's cluster file with one host's settings changed (its [[hosts]] block)."""
    text = cluster.read_text().replace('"keys/', f'"{cluster.parent}/keys/')
    blocks = text.split("[[hosts]]\n")
    for i, block in enumerate(blocks):
        if block.startswith(f'name = "{host}"\n'):
            head, sep, rest = block.partition("\n[[hosts.services]]")
            lines = [ln for ln in head.splitlines() if not ln.startswith(drop)] if drop else head.splitlines()
            blocks[i] = "\n".join([*lines, *add]) + "\n" + sep + rest
    out.write_text("[[hosts]]\n".join(blocks))
    return out


def test_healthy_lab_passes(ssh_lab: Path) -> None:
    code, doc = doctor_json(ssh_lab)
    assert code == ExitStatus.OK, [c for c in doc["checks"] if c["status"] == "fail"]
    assert doc["ready"] and doc["counts"]["fail"] == 0
    keys = {c["key"] for c in doc["checks"]}
    assert {"ssh_login", "sudo", "capture_tools", "pyspy_present", "pyspy_attach", "gpu_readable",
            "metrics_enabled", "router_metrics", "log_source", "safeguard.pd_bootstrap_timeout",
            "same_sglang_version", "pd_page_size", "clock_offset", "disk_room"} <= keys
    for host in ("router-0", "prefill-0", "decode-0"):
        assert checks(doc, "pyspy_attach", host)[0]["status"] == "ok"


@pytest.fixture(scope="module")
def access_degraded(ssh_lab: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """prefill-0: py-spy not on the login PATH; decode-0: the non-root user without sudo."""
    if shutil.which("py-spy", path=LOGIN_PATH):
        pytest.fail(f"py-spy is on the login PATH ({LOGIN_PATH}): this test needs it absent there")
    d = tmp_path_factory.mktemp("doctor-access")
    one = edited(ssh_lab, d / "one.toml", "prefill-0", drop=("py_spy",), add=('py_spy = "py-spy"',))
    both = edited(one, d / "cluster.toml", "decode-0", drop=("sudo",))
    code, doc = doctor_json(both)
    return {"code": code, "doc": doc, "cluster": both}


def test_pyspy_missing_fails_with_the_install_fix(access_degraded: dict[str, Any]) -> None:
    doc = access_degraded["doc"]
    assert access_degraded["code"] == ExitStatus.NOT_READY
    [bad] = checks(doc, "pyspy_present", "prefill-0")
    assert bad["status"] == "fail" and "'py-spy' not found" in bad["evidence"]
    assert "pip install py-spy" in bad["fix"] and "py_spy" in bad["fix"]
    assert checks(doc, "pyspy_present", "router-0")[0]["status"] == "ok"
    assert "pyspy_present" in doc["summary"]


def test_ptrace_refused_without_sudo_fails_attach(access_degraded: dict[str, Any]) -> None:
    doc = access_degraded["doc"]
    [bad] = checks(doc, "pyspy_attach", "decode-0")
    assert bad["status"] == "fail", bad
    assert "CAP_SYS_PTRACE no" in bad["evidence"] and "servers run as uid 0" in bad["evidence"]
    assert "sudo = true" in bad["fix"] and "cap_sys_ptrace" in bad["fix"]
    assert checks(doc, "pyspy_attach", "router-0")[0]["status"] == "ok"  # still through sudo


@pytest.fixture(scope="module")
def config_degraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One lab, four faults: metrics off on decode, prefill's bootstrap timeout 100000,
    decode's page size 32 (prefill 64), decode posing as sglang 0.5.9."""
    lab_dir = tmp_path_factory.mktemp("doctor-config")
    info = lab_up(lab_dir, ssh=True, base_port=ports.block(),
                  extra_env={"prefill": {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "100000"},
                             "decode": {"PDFX_LAB_SGLANG_VERSION": "0.5.9"}},
                  extra_args={"decode": ["--page-size", "32"]},
                  drop_args={"decode": ["--enable-metrics"]})
    try:
        code, text = doctor(info.cluster_file)
        code_j, doc = doctor_json(info.cluster_file)
        yield {"code": code, "text": text, "code_json": code_j, "doc": doc}
    finally:
        lab_down(lab_dir)


def test_metrics_off_on_one_server(config_degraded: dict[str, Any]) -> None:
    doc = config_degraded["doc"]
    [bad] = checks(doc, "metrics_enabled", "decode-0")
    assert bad["status"] == "fail" and "without --enable-metrics" in bad["evidence"]
    assert "add --enable-metrics" in bad["fix"]
    assert checks(doc, "metrics_enabled", "prefill-0")[0]["status"] == "ok"


def test_pd_timeout_raised_on_one_role(config_degraded: dict[str, Any]) -> None:
    doc = config_degraded["doc"]
    [bad] = checks(doc, "safeguard.pd_bootstrap_timeout", "prefill-0")
    assert bad["status"] == "fail" and "100000" in bad["evidence"]
    assert "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300" in bad["fix"]
    assert checks(doc, "safeguard.pd_bootstrap_timeout", "decode-0")[0]["status"] == "ok"


def test_page_size_mismatch(config_degraded: dict[str, Any]) -> None:
    [bad] = checks(config_degraded["doc"], "pd_page_size")
    assert bad["status"] == "fail" and "32" in bad["evidence"] and "64" in bad["evidence"]
    assert "same --page-size" in bad["fix"]
    assert checks(config_degraded["doc"], "pd_kv_dtype")[0]["status"] == "ok"


def test_different_sglang_version_on_one_host(config_degraded: dict[str, Any]) -> None:
    [bad] = checks(config_degraded["doc"], "same_sglang_version")
    assert bad["status"] == "fail"
    assert "decode-0 (decode) 0.5.9" in bad["evidence"] and "prefill-0 (prefill) 0.5.23" in bad["evidence"]
    assert "same sglang version" in bad["fix"]


def test_exit_code_and_one_line_summary(config_degraded: dict[str, Any]) -> None:
    assert config_degraded["code"] == config_degraded["code_json"] == int(ExitStatus.NOT_READY) == 7
    doc = config_degraded["doc"]
    assert doc["summary"].startswith(f"4 of {len(doc['checks'])} checks would leave the next capture blind: ")
    text = config_degraded["text"]
    assert "\ndecode-0  (" in text and "FAIL metrics_enabled [decode:" in text
    assert doc["summary"] in text


def test_snapshot_doctor_then_diff_shows_readiness_worse(ssh_lab: Path, access_degraded: dict[str, Any],
                                                         tmp_path: Path) -> None:
    store = tmp_path / "store"
    base = [*CLI, "snapshot", "--store", str(store), "--doctor",
            "--samples", "1", "--deadline", "30s", "--json"]
    good = subprocess.run([*base, "-c", str(ssh_lab)], capture_output=True, text=True, timeout=90)
    bad = subprocess.run([*base, "-c", str(access_degraded["cluster"])], capture_output=True, text=True,
                         timeout=90)
    a, b = json.loads(good.stdout), json.loads(bad.stdout)
    assert a["ready"] is True and b["ready"] is False and "pyspy_present" in b["readiness"]
    assert (Path(a["path"]) / "doctor.json").exists()
    verify = subprocess.run([*CLI, "verify", a["path"]],
                            capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr  # doctor.json is derived, not extra
    diff = subprocess.run([*CLI, "diff", a["path"], b["path"], "--json"],
                          capture_output=True, text=True, timeout=60)
    changes = [c for c in json.loads(diff.stdout)["changes"] if c["kind"] == "readiness"]
    spy = [c for c in changes if c["scope"] == "prefill-0" and c["key"] == "pyspy_present"]
    assert spy and spy[0]["before"] == "ok" and spy[0]["after"].startswith("fail:")
    assert spy[0]["relevance"] == "high" and "py_spy" in spy[0]["note"]
