"""Every exit code of the one table, and every bad input, over real sshd and the lab.

Each capture is the real CLI as a process (faultkit), on short deadlines. The live progress
block is checked on a real pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pdforensics.errors import ExitStatus
from pdforensics.lab import set_fault
from tests.e2e import faultkit as fk
from tests.security.ptyrun import run_on_pty, unsafe_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.lab]

FAST = ["--deadline", "20s", "--samples", "2", "--interval", "1s", "--stack-dumps", "1"]


@pytest.fixture
def cluster(ssh_lab: Path) -> dict[str, Any]:
    return fk.read_cluster(ssh_lab)


def doc_of(run: fk.Run) -> dict[str, Any]:
    assert run.stdout.strip(), run.output
    parsed: dict[str, Any] = json.loads(run.stdout)
    return parsed


def test_complete_is_0_and_a_gpu_less_router_is_no_gap(cluster: dict[str, Any], tmp_path: Path) -> None:
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST,
                     "--json", "--fail-on", "WEDGED")
    doc = doc_of(run)
    assert run.rc == ExitStatus.OK, (doc["partial_reasons"], doc["gaps"], run.stderr)
    # the session's lab is shared: an earlier test's fault leaves a traceback in the prefill's
    # log (a LOG_SIGNATURE warning, DEGRADED); --fail-on WEDGED still exits 0 for it
    assert doc["status"] == "complete" and doc["verdict"] in ("HEALTHY", "DEGRADED"), \
        (doc["partial_reasons"], [(f["key"], f["severity"], f["title"]) for f in doc["findings"]])
    assert not [f for f in doc["findings"] if f["severity"] == "critical"], doc["findings"]
    # the router's host has no GPU: its nvidia-smi says "No devices were found" (exit 6)
    assert not [g for g in doc["gaps"] if g["source"].startswith("nvidia_smi")], doc["gaps"]
    assert any(a.startswith("router-0 nvidia_smi") for a in doc["expected_absent"]), doc
    assert run.results(host="router-0", source="nvidia_smi_query")[0]["exit_status"] == 6
    # progress went to stderr as plain lines (not a TTY), one "found" line per host
    found = [ln for ln in run.stderr.splitlines() if "found" in ln and "service" in ln]
    assert sorted(ln.split(":")[0].strip() for ln in found) == ["decode-0", "prefill-0", "router-0"], run.stderr


def test_timed_out_endpoint_makes_it_partial_3(cluster: dict[str, Any], tmp_path: Path) -> None:
    """Discovery fine, one declared server accepts and never answers: every fetch of it times
    out. The capture says partial, names them, and exits 3 (it used to say complete)."""
    port = fk_free_port()
    mute = fk.Server("127.0.0.1", port, fk.silent)
    try:
        fk.host(cluster, "decode-0")["services"].append({"role": "decode", "port": port})
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST, "--json")
    finally:
        mute.close()
    doc = doc_of(run)
    assert run.rc == ExitStatus.PARTIAL, run.output
    assert doc["status"] == "partial" and doc["collected"]
    (reason,) = [r for r in doc["partial_reasons"] if r.startswith("decode-0:")]
    assert "timed out or could not run" in reason and "(timed out)" in reason, reason
    assert run.manifest()["status"] == "partial"


def test_every_host_unreachable_is_nothing_collected_6(cluster: dict[str, Any], tmp_path: Path) -> None:
    for h in cluster["hosts"]:
        h["port"] = fk_free_port()  # nothing listens there
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    assert run.rc == int(ExitStatus.NOTHING_COLLECTED) == 6, run.output
    assert "status: partial (nothing collected)" in run.stdout
    assert run.manifest()["partial_reasons"][0] == "nothing collected: no host could be reached"
    fk.no_traceback(run)


def test_one_host_unreachable_is_still_3(cluster: dict[str, Any], tmp_path: Path) -> None:
    fk.host(cluster, "router-0")["port"] = fk_free_port()
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST, "-q")
    assert run.rc == ExitStatus.PARTIAL, run.output
    assert run.stderr == "" and len(run.stdout.splitlines()) == 1  # -q: the result line only
    assert run.stdout.startswith("partial ") and str(run.bundle) in run.stdout


def test_fail_on_wedged_is_4_and_snapshot_stays_0(ssh_lab: Path, cluster: dict[str, Any],
                                                  tmp_path: Path) -> None:
    set_fault(ssh_lab.parent, "transfer-stuck")
    try:
        cfile = fk.write_cluster(cluster, tmp_path / "c.toml")
        run = fk.capture(cfile, tmp_path / "out", *FAST, "--no-stacks", "--json", "--fail-on", "WEDGED")
        plain = subprocess.run([*fk.CLI, "analyze", str(run.bundle)], capture_output=True, text=True)
        snap = [subprocess.run([*fk.CLI, "snapshot", "-c", str(cfile), "--store", str(tmp_path / "s"),
                                "--deadline", "20s", "--json", *extra], capture_output=True, text=True)
                for extra in ((), ("--fail-on", "DEGRADED"))]
    finally:
        set_fault(ssh_lab.parent, "healthy")
    doc = doc_of(run)
    assert doc["verdict"] == "WEDGED", doc["findings"][:2]
    assert run.rc == int(ExitStatus.VERDICT) == 4, run.stderr
    assert plain.returncode == 0  # without --fail-on the verdict never sets the exit code
    unset, failing = snap
    assert json.loads(unset.stdout)["verdict"] != "HEALTHY"
    assert unset.returncode in (0, 3) and failing.returncode == 4, (unset.stderr, failing.stderr)


@pytest.mark.parametrize("breakage,needle", [
    (lambda c, d: fk.host(c, "decode-0").update(adress="x"), "did you mean 'address'?"),
    (lambda c, d: fk.host(c, "decode-0").update(identity=str(d / "gone")), "identity file"),
    (lambda c, d: fk.host(c, "decode-0").update(known_hosts=str(d / "gone")), "known_hosts file"),
    (lambda c, d: fk.host(c, "decode-0").update(known_hosts=malformed_known_hosts(d)),
     "line 1 is not a known_hosts line"),
])
def test_bad_cluster_file_is_2_before_any_work(cluster: dict[str, Any], tmp_path: Path,
                                               breakage: Any, needle: str) -> None:
    breakage(cluster, tmp_path)
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    assert run.rc == ExitStatus.USAGE and needle in run.stderr, run.output
    assert run.bundle is None and not (tmp_path / "out").exists()
    fk.no_traceback(run)


@pytest.mark.parametrize("deadline", ["0", "-5", "5x"])
def test_bad_deadline_is_2(ssh_lab: Path, tmp_path: Path, deadline: str) -> None:
    run = fk.capture(ssh_lab, tmp_path / "out", "--deadline", deadline)
    assert run.rc == ExitStatus.USAGE and "duration" in run.stderr, run.output
    assert run.bundle is None


def test_cluster_env_drives_capture(ssh_lab: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PDFORENSICS_CLUSTER": str(ssh_lab)}
    r = subprocess.run([*fk.CLI, "capture", "-o", str(tmp_path / "out"), *FAST, "--no-stacks", "-q"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("complete ") and "lab-" in r.stdout
    env["PDFORENSICS_CLUSTER"] = str(tmp_path / "missing.toml")
    r = subprocess.run([*fk.CLI, "capture", "-o", str(tmp_path / "out2")], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 2 and "missing.toml not found" in r.stderr
    assert not (tmp_path / "out2").exists()  # never a silent capture of the local machine


def test_live_block_on_a_terminal(ssh_lab: Path, tmp_path: Path) -> None:
    rc, seen = run_on_pty([*fk.CLI, "capture", "-c", str(ssh_lab), "-o", str(tmp_path / "out"), *FAST],
                          timeout=60)
    text = seen.decode("utf-8", "replace")
    assert rc == 0, text
    assert unsafe_bytes(seen, own_block=True) == []  # only the block's own sequences
    ups = re.findall(r"\x1b\[(\d+)A", text)
    assert len(ups) >= 3 and set(ups) == {"4"}, ups  # header + 3 hosts, redrawn in place
    frames = text.split("\x1b[4A")
    assert "metrics" in text or "slow sources" in text
    assert re.search(r"\d+/\d+", frames[-1]) and "of 20s" in frames[-1]
    last = frames[-1]
    assert all(f"{h}" in last for h in ("router-0", "prefill-0", "decode-0"))
    assert "done" in last
    tail = last[last.index("verdict:"):] if "verdict:" in last else ""
    assert tail and "bundle:" in tail and "report:" in tail, last
    assert "\x1b" not in tail  # the summary after the block is plain text
    for host in ("router-0", "prefill-0", "decode-0"):  # "found N services" once per host
        assert len(re.findall(rf"{host}\s+\S.*found \d+ service", last)) <= 1


def malformed_known_hosts(d: Path) -> str:
    (d / "kh").write_text("[127.0.0.4]:22 ssh-ed25519\n")  # no key
    return str(d / "kh")


def fk_free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
