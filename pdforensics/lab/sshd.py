"""Loopback OpenSSH hosts for the lab: keys, known_hosts, one stock sshd per host."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from pathlib import Path

from pdforensics.errors import PdforensicsError
from pdforensics.lab.layout import LabHost

SSHD = "/usr/sbin/sshd"
SUDOERS_DROPIN = Path("/etc/sudoers.d/pdforensics-lab")


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


def prepare(lab_dir: Path, hosts: tuple[LabHost, ...], port: int) -> None:
    """Client key pair, authorized_keys, per-host host keys, known_hosts and sshd configs."""
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


def ensure_sudo_user(user: str, lab_dir: Path) -> None:
    """Create `user` if missing, authorize the lab key for it, allow passwordless sudo."""
    if shutil.which("sudo") is None:
        raise PdforensicsError("sudo_user needs the sudo package (apt-get install sudo)")
    try:
        pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", user], check=True, capture_output=True)
    # a locked password ("!") makes sshd without PAM refuse the login; "*" is unusable, not locked
    subprocess.run(["usermod", "-p", "*", user], check=True, capture_output=True)
    entry = pwd.getpwnam(user)
    ssh_dir = Path(entry.pw_dir) / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    auth = ssh_dir / "authorized_keys"
    pub = (lab_dir / "keys" / "id_ed25519.pub").read_text().strip()
    existing = auth.read_text().splitlines() if auth.exists() else []
    if pub not in existing:
        auth.write_text("\n".join([*existing, pub]) + "\n")
    for path in (ssh_dir, auth):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    auth.chmod(0o600)
    SUDOERS_DROPIN.parent.mkdir(parents=True, exist_ok=True)
    tmp = SUDOERS_DROPIN.with_name(".pdforensics-lab.tmp")
    tmp.write_text(f"{user} ALL=(ALL) NOPASSWD:ALL\n")
    tmp.chmod(0o440)
    os.replace(tmp, SUDOERS_DROPIN)
