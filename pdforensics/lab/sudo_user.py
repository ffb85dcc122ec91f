"""The lab's ops user: granted per lab (account, lab key, sudoers drop-in), revoked at `lab down`.

`grant` records what it did in `<lab>/sudo-user.json` before it changes anything, so `revoke`
undoes exactly that even after a crash half-way: it removes the account only when this lab
created it (a user that was there before keeps its account and loses only the lab's key),
and always removes this lab's own sudoers drop-in.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from pdforensics.errors import PdforensicsError

SUDOERS_DIR = Path("/etc/sudoers.d")
SUDOERS_PREFIX = "pdforensics-lab-"  # one drop-in per lab: pdforensics-lab-<hash of its dir>
RECORD = "sudo-user.json"


@dataclass(frozen=True)
class SudoGrant:
    """What one lab did for its ops user."""

    user: str
    created: bool  # the lab created the account: revoke deletes it
    sudoers: str  # this lab's drop-in
    key: str  # the lab's public key line, added to the user's authorized_keys


def sudoers_path(lab_dir: Path) -> Path:
    digest = hashlib.sha256(str(Path(lab_dir).resolve()).encode()).hexdigest()[:12]
    return SUDOERS_DIR / f"{SUDOERS_PREFIX}{digest}"


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def _authorize(user: str, pub: str) -> None:
    entry = pwd.getpwnam(user)
    ssh_dir = Path(entry.pw_dir) / ".ssh"
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth = ssh_dir / "authorized_keys"
    existing = auth.read_text().splitlines() if auth.exists() else []
    if pub not in existing:
        auth.write_text("\n".join([*existing, pub]) + "\n")
    for path in (ssh_dir, auth):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    auth.chmod(0o600)


def grant(user: str, lab_dir: Path) -> SudoGrant:
    """Create `user` if missing, authorize the lab key for it, allow passwordless sudo."""
    if shutil.which("sudo") is None:
        raise PdforensicsError("sudo_user needs the sudo package (apt-get install sudo)")
    lab_dir = Path(lab_dir).resolve()
    pub = (lab_dir / "keys" / "id_ed25519.pub").read_text().strip()
    old = read_grant(lab_dir)
    created = not _exists(user) or bool(old and old.user == user and old.created)
    g = SudoGrant(user, created, str(sudoers_path(lab_dir)), pub)
    (lab_dir / RECORD).write_text(json.dumps(asdict(g), indent=1))  # first: revoke can undo
    if not _exists(user):
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", user], check=True, capture_output=True)
    # a locked password ("!") makes sshd without PAM refuse the login; "*" is unusable, not locked
    subprocess.run(["usermod", "-p", "*", user], check=True, capture_output=True)
    _authorize(user, pub)
    drop_in = Path(g.sudoers)
    drop_in.parent.mkdir(parents=True, exist_ok=True)
    tmp = drop_in.with_name(f".{drop_in.name}.tmp")  # sudo skips names with a dot
    tmp.write_text(f"{user} ALL=(ALL) NOPASSWD:ALL\n")
    tmp.chmod(0o440)
    os.replace(tmp, drop_in)
    return g


def read_grant(lab_dir: Path) -> SudoGrant | None:
    try:
        data = json.loads((Path(lab_dir) / RECORD).read_text())
        return SudoGrant(str(data["user"]), bool(data["created"]), str(data["sudoers"]),
                         str(data["key"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _end_processes(user: str) -> None:
    """Stop what still runs as the lab-created user (its ssh sessions), so userdel can go."""
    procs = [p for p in psutil.process_iter(["username"]) if p.info["username"] == user]
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


def _remove_key(user: str, pub: str) -> None:
    try:
        auth = Path(pwd.getpwnam(user).pw_dir) / ".ssh" / "authorized_keys"
        lines = auth.read_text().splitlines()
    except (KeyError, OSError):
        return
    if pub in lines:
        kept = [x for x in lines if x != pub]
        auth.write_text("".join(f"{x}\n" for x in kept))


def revoke(lab_dir: Path) -> None:
    """Undo `grant` for this lab (idempotent): drop-in, key, and the account it created."""
    g = read_grant(lab_dir)
    if g is None:
        return
    Path(g.sudoers).unlink(missing_ok=True)
    if g.created and _exists(g.user):
        _end_processes(g.user)
        done = subprocess.run(["userdel", "-r", g.user], capture_output=True, text=True)
        if _exists(g.user):
            raise PdforensicsError(f"could not remove the lab's user {g.user}: "
                                   f"{done.stderr.strip() or done.returncode}")
    elif not g.created:
        _remove_key(g.user, g.key)
    (Path(lab_dir) / RECORD).unlink(missing_ok=True)
