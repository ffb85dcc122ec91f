"""The lab as a Slurm job: prefill, decode and the router each run as one step of a batch job
(`srun --overlap`, one step per worker), each writing `{node}_{role}_w0.log` into the job's
output directory like NVIDIA's recipes. Needs a running Slurm (slurmctld + slurmd) whose
clients work from here (SLURM_CONF)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pdforensics.errors import PdforensicsError
from pdforensics.lab.core import (
    _check_fault,
    _preflight,
    _prepare_dir,
    _wait_ready,
    _write_atomic,
    lab_down,
)
from pdforensics.lab.layout import LabHost, Ports, lab_hosts, paths
from pdforensics.lab.requirements import require_lab_tools
from pdforensics.lab.router import healthy_workers, router_argv
from pdforensics.lab.servers import install_nvidia_smi, server_argv, server_env

JOB_NAME = "pdfx-lab"
NODE_HOST = "prefill-0,decode-0"  # the lab hosts sharing the job's node (see lab/bin/nvidia-smi)
START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SlurmLab:
    """A lab running as a Slurm job."""

    dir: Path
    job_id: str
    node: str
    out_dir: Path
    ports: Ports

    def worker_log(self, role: str) -> Path:
        return self.out_dir / f"{self.node}_{role}_w0.log"

    def nvidia_smi(self) -> Path:
        """The node's fake nvidia-smi: prefill's and decode's GPUs together."""
        return self.dir / "hosts" / NODE_HOST / "bin" / "nvidia-smi"


def _env_argv(env: Mapping[str, str]) -> list[str]:
    """`env -u X ... K=V ...`: turn the batch step's environment into this role's."""
    unset = [a for k in sorted(os.environ) if k not in env for a in ("-u", k)]
    changed = [f"{k}={v}" for k, v in sorted(env.items()) if os.environ.get(k) != v]
    return ["env", *unset, *changed]


def _step(out_dir: Path, role: str, argv: Sequence[str], env: Mapping[str, str]) -> str:
    srun = ["srun", "--overlap", "-N1", "-n1", f"--job-name={role}_w0",
            f"--output={out_dir}/%N_{role}_w0.log", "--", *_env_argv(env), *argv]
    return " ".join(shlex.quote(a) for a in srun) + " &"


def job_script(lab_dir: Path, hosts: Sequence[LabHost], ports: Ports, out_dir: Path) -> str:
    """The sbatch script: one background srun step per worker, then wait."""
    by_role = {h.role: h for h in hosts}
    lines = ["#!/bin/bash", f"#SBATCH --job-name={JOB_NAME}", "#SBATCH --nodes=1",
             "#SBATCH --ntasks=1", f"#SBATCH --output={out_dir}/slurm-%j.out",
             f"#SBATCH --error={out_dir}/slurm-%j.err", f"#SBATCH --chdir={lab_dir}",
             "echo \"lab job $SLURM_JOB_ID on $SLURMD_NODENAME\""]
    for role in ("prefill", "decode"):
        host = by_role[role]
        lines.append(_step(out_dir, role, server_argv(host, ports), server_env(lab_dir, host, None)))
    router = by_role["router"]
    # the stand-in router: it needs no ordering (smg registers its workers once, at start)
    lines.append(_step(out_dir, "router", router_argv("standin", router, by_role["prefill"], by_role["decode"],
                                                      ports), server_env(lab_dir, router, None)))
    lines += ["wait", ""]
    return "\n".join(lines)


def _slurm(argv: Sequence[str], timeout_s: float = 15.0) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PdforensicsError(f"`{' '.join(argv)}` failed: {exc}") from None
    if done.returncode != 0:
        raise PdforensicsError(f"`{' '.join(argv)}` failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def _job_field(job_id: str, key: str) -> str:
    out = _slurm(["squeue", "-h", "-j", job_id, "-o", key])
    return out.strip()


def slurm_lab_up(lab_dir: Path, fault: str = "healthy", base_port: int | None = None) -> SlurmLab:
    """Submit the lab as a batch job and wait until its servers and its router answer."""
    _check_fault(fault)
    require_lab_tools(True)
    lab_dir = Path(lab_dir).resolve()
    ports = Ports.from_base(base_port)
    hosts = lab_hosts(False)
    _preflight(lab_dir, hosts, ports, False, None)
    _prepare_dir(lab_dir, hosts, ports, fault, False, (), None)
    install_nvidia_smi(lab_dir, LabHost(NODE_HOST, "node", "127.0.0.1", "local", ()))
    out_dir = lab_dir / "slurm-out"
    out_dir.mkdir(parents=True, exist_ok=True)
    script = lab_dir / "lab-job.sh"
    _write_atomic(script, job_script(lab_dir, hosts, ports, out_dir))
    job_id = _slurm(["sbatch", "--parsable", str(script)]).strip().split(";")[0]
    record = {"dir": str(lab_dir), "fault": fault, "ssh": False, "sudo_user": None,
              "ports": ports.__dict__, "pids": {}, "slurm_job": job_id,
              "hosts": [{"name": h.name, "role": h.role, "address": h.address, "bind": h.bind,
                         "gpus": list(h.gpus)} for h in hosts],
              "extra_args": {}, "extra_env": {}, "titles": True}
    _write_atomic(paths(lab_dir)["json"], json.dumps(record, indent=2))
    try:
        node = _wait_running(job_id)
        by_role = {h.role: h for h in hosts}
        _wait_ready(lab_dir, by_role, ports, False, {}, phase="servers")
        _wait_ready(lab_dir, by_role, ports, False, {}, phase="router")
        # the router step starts with the servers: its first health check may have failed,
        # and until a later one passes it routes nothing (a capture reads ROUTER_NO_WORKERS)
        _wait_healthy_workers(f"http://{by_role['router'].bind}:{ports.router}", len(by_role) - 1)
    except BaseException as exc:
        logs = " | ".join(f"{p.name}: {_tail(p)}" for p in sorted(out_dir.glob("*")))
        slurm_lab_down(lab_dir)
        if isinstance(exc, PdforensicsError):
            raise PdforensicsError(f"{exc} (slurm job {job_id}; {logs})") from None
        raise
    return SlurmLab(dir=lab_dir, job_id=job_id, node=node, out_dir=out_dir, ports=ports)


def _wait_healthy_workers(base: str, count: int, timeout_s: float = 30.0) -> None:
    end = time.monotonic() + timeout_s
    while healthy_workers(base) < count:
        if time.monotonic() > end:
            raise PdforensicsError(f"the lab's router ({base}) never called its {count} workers healthy")
        time.sleep(0.25)


def _wait_running(job_id: str) -> str:
    end = time.monotonic() + START_TIMEOUT_S
    state = ""
    while time.monotonic() < end:
        state = _job_field(job_id, "%T")
        if state == "RUNNING":
            return _job_field(job_id, "%N")
        if state in ("", "FAILED", "CANCELLED", "COMPLETED", "TIMEOUT", "NODE_FAIL"):
            break
        time.sleep(0.2)
    raise PdforensicsError(f"slurm job {job_id} not running within {START_TIMEOUT_S:.0f} s "
                           f"(state {state or 'gone'})")


def _tail(path: Path) -> str:
    try:
        return " / ".join(path.read_text(errors="replace").strip().splitlines()[-2:])[-300:]
    except OSError:
        return ""


def slurm_lab_down(lab_dir: Path) -> None:
    """Cancel the lab's job, then kill whatever of the lab is left (lab_down); idempotent."""
    lab_dir = Path(lab_dir).resolve()
    try:
        job_id = json.loads(paths(lab_dir)["json"].read_text()).get("slurm_job")
    except (OSError, ValueError):
        job_id = None
    if job_id:
        subprocess.run(["scancel", "--full", str(job_id)], capture_output=True, timeout=15, check=False)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                if not _job_field(str(job_id), "%T"):
                    break
            except PdforensicsError:
                break
            time.sleep(0.2)
    lab_down(lab_dir)
