"""Where a lab keeps its things, and which ports and addresses its hosts use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STANDIN_DIR = Path(__file__).resolve().parent / "standin"
NVIDIA_SMI_SRC = Path(__file__).resolve().parent / "bin" / "nvidia-smi"


@dataclass(frozen=True)
class Ports:
    """Every port of one lab. Defaults are SGLang's; base_port B gives a block B..B+5."""

    prefill: int = 30000
    decode: int = 30001
    bootstrap: int = 8998
    router: int = 8000
    router_metrics: int = 29000
    ssh: int = 2222

    @classmethod
    def from_base(cls, base_port: int | None) -> Ports:
        if base_port is None:
            return cls()
        b = base_port
        return cls(prefill=b, decode=b + 1, bootstrap=b + 2, router=b + 3, router_metrics=b + 4, ssh=b + 5)


@dataclass(frozen=True)
class LabHost:
    """One host of the lab: name, the address it listens on, its role."""

    name: str
    role: str  # router | prefill | decode
    bind: str  # the address its servers (and sshd) listen on
    address: str  # what cluster.toml says: "local" or the loopback address
    gpus: tuple[int, ...]  # GPU indices its server uses on that host


def lab_hosts(ssh: bool) -> tuple[LabHost, ...]:
    addrs = {"router": "127.0.0.2", "prefill": "127.0.0.3", "decode": "127.0.0.4"}
    out = []
    for name, role, gpus in (
        ("router-0", "router", ()),
        ("prefill-0", "prefill", (0, 1)),
        ("decode-0", "decode", (2, 3)),
    ):
        bind = addrs[role] if ssh else "127.0.0.1"
        out.append(LabHost(name, role, bind, addrs[role] if ssh else "local", gpus))
    return tuple(out)


def paths(lab_dir: Path) -> dict[str, Path]:
    return {
        "json": lab_dir / "lab.json",
        "cluster": lab_dir / "cluster.toml",
        "fault": lab_dir / "fault",
        "logs": lab_dir / "logs",
        "run": lab_dir / "run",
        "keys": lab_dir / "keys",
        "sshd": lab_dir / "sshd",
        "hosts": lab_dir / "hosts",
    }
