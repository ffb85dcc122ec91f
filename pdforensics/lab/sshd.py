"""Loopback OpenSSH hosts for the lab: keys, known_hosts, one stock sshd per host."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from pdforensics.errors import PdforensicsError
from pdforensics.lab import clock as lab_clock
from pdforensics.lab import sudo_user
from pdforensics.lab.layout import LabHost
from pdforensics.lab.sudo_user import SudoGrant

SSHD = "/usr/sbin/sshd"


def require_tools() -> None:
    if not os.path.exists(SSHD):
        raise PdforensicsError(f"{SSHD} not found: install openssh-server (apt-get install openssh-server)")
    if shutil.which("ssh-keygen") is None:
        raise PdforensicsError("ssh-keygen not found: install openssh-client")


def _keygen(path: Path, comment: str) -> str:
    if not path.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            check=True,
            capture_output=True,
        )
    return path.with_suffix(".pub").read_text().strip()


def prepare(lab_dir: Path, hosts: tuple[LabHost, ...], port: int,
            no_sftp: tuple[str, ...] = ()) -> None:
    """Client key pair, authorized_keys, per-host host keys, known_hosts and sshd configs.
    Each sshd serves the SFTP subsystem (in-process `internal-sftp`; Debian's config names
    sftp-server), except the hosts named in no_sftp: no `Subsystem` line, as a locked-down
    host might have."""
    keys, conf_dir = lab_dir / "keys", lab_dir / "sshd"
    keys.mkdir(parents=True, exist_ok=True)
    conf_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(keys, 0o700)
    client_pub = _keygen(keys / "id_ed25519", "pdforensics-lab")
    (keys / "authorized_keys").write_text(client_pub + "\n")
    known = []
    for host in hosts:
        key_path = conf_dir / f"{host.name}_ed25519_key"
        host_pub = _keygen(key_path, f"root@{host.name}")
        kind, blob = host_pub.split()[:2]
        known.append(f"[{host.bind}]:{port} {kind} {blob}")
        (conf_dir / f"{host.name}.conf").write_text(
            f"Port {port}\n"
            f"ListenAddress {host.bind}\n"
            f"HostKey {key_path}\n"
            f"PidFile {conf_dir / (host.name + '.pid')}\n"
            f"AuthorizedKeysFile {keys / 'authorized_keys'} .ssh/authorized_keys\n"
            "StrictModes no\n"
            "UsePAM no\n"
            + lab_clock.sshd_lines(lab_dir, host.name)
            + ("Subsystem sftp internal-sftp\n" if host.name not in no_sftp else "")
        )
    (keys / "known_hosts").write_text("\n".join(known) + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)


def sshd_argv(lab_dir: Path, host: LabHost) -> list[str]:
    return [SSHD, "-D", "-e", "-f", str(lab_dir / "sshd" / f"{host.name}.conf")]


def banner_ready(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0) as sock:
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def ensure_sudo_user(user: str, lab_dir: Path) -> SudoGrant:
    """Grant the lab's ops user (see lab/sudo_user.py); `revoke_sudo_user` undoes it."""
    return sudo_user.grant(user, lab_dir)


def revoke_sudo_user(lab_dir: Path) -> None:
    sudo_user.revoke(lab_dir)
