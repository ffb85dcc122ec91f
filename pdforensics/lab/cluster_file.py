"""Write the cluster.toml that points pdforensics at a lab."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from pdforensics.lab.layout import LabHost, Ports


def _s(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _py_spy() -> str | None:
    """py-spy as the lab hosts will find it: on PATH, or next to this interpreter."""
    if shutil.which("py-spy"):
        return None
    candidate = Path(sys.executable).parent / "py-spy"
    return str(candidate) if candidate.exists() else None


def render_cluster(lab_dir: Path, hosts: tuple[LabHost, ...], ports: Ports, ssh: bool, sudo_user: str | None,
                   gpus: bool = True) -> str:
    """gpus=False: the hosts have no GPU and no nvidia-smi (the real engine lab on the CPU)."""
    lines = ["[cluster]", 'name = "lab"', ""]
    for host in hosts:
        lines += ["[[hosts]]", f"name = {_s(host.name)}", f"address = {_s(host.address)}"]
        if ssh:
            lines += [
                f"port = {ports.ssh}",
                f"user = {_s(sudo_user or 'root')}",
                'identity = "keys/id_ed25519"',
                'known_hosts = "keys/known_hosts"',
            ]
            if sudo_user:
                lines.append("sudo = true")
        if gpus:
            nvsmi = lab_dir / "hosts" / host.name / "bin" / "nvidia-smi"
            lines += [f"nvidia_smi = {_s(str(nvsmi))}", "simulated_gpu = true"]
        py_spy = _py_spy()
        if py_spy:
            lines.append(f"py_spy = {_s(py_spy)}")
        lines.append("")
        lines += ["[[hosts.services]]", f"role = {_s(host.role)}"]
        if host.role == "router":
            lines += [f"port = {ports.router}", f"metrics_port = {ports.router_metrics}"]
        else:
            lines.append(f"port = {ports.prefill if host.role == 'prefill' else ports.decode}")
        lines += [f"log_file = {_s(str(lab_dir / 'logs' / (host.role + '.log')))}", ""]
    return "\n".join(lines)
