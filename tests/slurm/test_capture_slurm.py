"""End-to-end against a real Slurm: the lab runs as a batch job (one step per worker), and
`capture --slurm-job` reaches it through `srun --overlap` only."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.lab.slurm_job import SlurmLab, slurm_lab_down
from pdforensics.views.loaded import load_capture
from tests.slurm.conftest import start_lab
from tests.support.bundles import wait_gathered
from tests.support.slurm import SlurmCluster

pytestmark = [pytest.mark.e2e, pytest.mark.lab]
DEADLINE_S = 40
#: sources a capture plans only for the machine it runs on (the SSH capture has none either)
LOCAL_ONLY = {"nvml"}
FAST = ["--samples", "2", "--interval", "1s", "--stack-dumps", "1", "--deadline", f"{DEADLINE_S}s", "--json"]


def _cluster_file(lab: SlurmLab, path: Path, slurm_job: str | None) -> Path:
    """The lab's one node; its three servers declared (other labs may run on this machine).
    The local file names each worker's log; the Slurm one leaves logs to discovery."""
    py_spy = Path(sys.executable).parent / "py-spy"
    lines = ["[cluster]", 'name = "slurmlab"']
    if slurm_job:
        lines.append(f'slurm_job = "{slurm_job}"')
    lines += ["[[hosts]]", f'name = "{lab.node}"', f'address = "{"local" if not slurm_job else lab.node}"',
              f'nvidia_smi = "{lab.nvidia_smi()}"', "simulated_gpu = true", f'py_spy = "{py_spy}"']
    p = lab.ports
    for role, port in (("prefill", p.prefill), ("decode", p.decode), ("router", p.router)):
        lines += ["[[hosts.services]]", f'role = "{role}"', f"port = {port}"]
        if role == "router":
            lines.append(f"metrics_port = {p.router_metrics}")
        if not slurm_job:
            lines.append(f'log_file = "{lab.worker_log(role)}"')
    path.write_text("\n".join(lines) + "\n")
    return path


def _capture(args: list[str]) -> tuple[int, dict[str, Any], float]:
    t0 = time.monotonic()
    result = CliRunner().invoke(main, ["capture", *args])
    assert result.stdout.strip().startswith("{"), result.output
    return result.exit_code, json.loads(result.stdout), time.monotonic() - t0


def test_slurm_capture_matches_the_local_capture_source_by_source(slurm_lab: SlurmLab,
                                                                   tmp_path: Path) -> None:
    local_file = _cluster_file(slurm_lab, tmp_path / "local.toml", None)
    slurm_file = _cluster_file(slurm_lab, tmp_path / "slurm.toml", slurm_lab.job_id)
    code_l, local, _ = _capture(["-c", str(local_file), "-o", str(tmp_path / "l"), *FAST])
    code_s, via, wall = _capture(["-c", str(slurm_file), "-o", str(tmp_path / "s"), *FAST])
    assert (code_l, code_s) == (0, 0), (local["partial_reasons"], via["partial_reasons"])
    assert via["status"] == "complete" and wall < DEADLINE_S
    assert via["verdict"] == local["verdict"] == "HEALTHY", (local["findings"], via["findings"])
    cap_l, cap_s = load_capture(Path(local["bundle"])), load_capture(Path(via["bundle"]))
    families_l = {r.source for r in cap_l.results} - LOCAL_ONLY
    families_s = {r.source for r in cap_s.results}
    assert families_s == families_l
    for r in cap_s.results:  # every command went through srun into the job, on its node
        assert r.argv is not None and r.argv[:5] == ("srun", "--overlap", f"--jobid={slurm_lab.job_id}",
                                                    "-w", slurm_lab.node), r.argv
        assert r.argv[r.argv.index("--") + 1] in ("timeout", "sudo"), r.argv
    logs = {r.target.get("role"): r for r in cap_s.results if r.source == "log_file"}
    assert set(logs) == {"prefill", "decode", "router"}
    assert logs["decode"].argv is not None and logs["decode"].argv[-1] == str(slurm_lab.worker_log("decode"))
    manifest = json.loads((Path(via["bundle"]) / "manifest.json").read_text())
    assert manifest["slurm"]["job_id"] == slurm_lab.job_id and manifest["slurm"]["via"] == "srun"
    assert {s["name"] for s in manifest["slurm"]["steps"]} >= {"prefill_w0", "decode_w0", "router_w0"}


def test_unknown_job_is_one_line_error(slurm: SlurmCluster, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["capture", "--slurm-job", "987654", "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert "987654" in result.output and "Traceback" not in result.output


def test_job_cancelled_mid_capture_gives_a_partial_bundle_with_the_reason(
        slurm: SlurmCluster, tmp_path: Path) -> None:
    lab = start_lab(slurm, tmp_path / "lab")
    try:
        cluster = _cluster_file(lab, tmp_path / "slurm.toml", lab.job_id)
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "pdforensics.cli", "capture", "-c", str(cluster),
                                 "-o", str(tmp_path / "b"), "--samples", "3", "--interval", "2s",
                                 "--stack-dumps", "2", "--deadline", "30s", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # discovery done, /metrics samples and py-spy dumps still to come
        assert wait_gathered(tmp_path / "b", "ps", 30.0), proc.poll()
        time.sleep(0.5)
        slurm.run(["scancel", lab.job_id])
        out, err = proc.communicate(timeout=60)
        wall = time.monotonic() - t0
    finally:
        slurm_lab_down(tmp_path / "lab")
    assert proc.returncode == 3, err
    doc = json.loads(out)
    assert doc["status"] == "partial" and wall < 30 + 5
    assert any("srun could not start" in r for r in doc["partial_reasons"]), doc["partial_reasons"]
    assert any(g["error"].startswith("srun could not start") and "expired" in g["error"]
               or "Invalid job id" in g["error"] for g in doc["gaps"]), doc["gaps"]
    cap = load_capture(Path(doc["bundle"]))
    assert any(r.source == "ps" and r.ok for r in cap.results)  # what came before is kept


def test_snapshot_of_a_slurm_job(slurm_lab: SlurmLab, tmp_path: Path) -> None:
    cluster = _cluster_file(slurm_lab, tmp_path / "slurm.toml", slurm_lab.job_id)
    cluster.write_text(cluster.read_text().replace(f'slurm_job = "{slurm_lab.job_id}"\n', ""))
    result = CliRunner().invoke(main, ["snapshot", "-c", str(cluster), "--store", str(tmp_path / "store"),
                                       "--slurm-job", slurm_lab.job_id, "--samples", "1",
                                       "--deadline", "30s", "--json"])
    assert result.exit_code == 0, result.output
    bundles = list((tmp_path / "store").rglob("manifest.json"))
    assert len(bundles) == 1
    manifest = json.loads(bundles[0].read_text())
    assert manifest["slurm"]["job_id"] == slurm_lab.job_id
    assert all(r["argv"][0] == "srun" for r in manifest["results"] if r["argv"]), manifest["results"][0]
