"""Where and how to reach a host over SSH: its entry merged with ~/.ssh/config."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import paramiko

from pdforensics.errors import TransportError
from pdforensics.model import HostSpec


def key_files(params: SshParams) -> Any:
    """paramiko takes a list of key files despite its stub's str annotation."""
    return params.identities or None


class SshParams:
    """Connection parameters after merging the host entry with ~/.ssh/config."""

    def __init__(self, hostname: str, port: int, user: str | None, identities: list[str],
                 known_hosts: str | None, proxy_jump: str | None):
        self.hostname = hostname
        self.port = port
        self.user = user
        self.identities = identities
        self.known_hosts = known_hosts
        self.proxy_jump = proxy_jump


def resolve_ssh_params(host: HostSpec, config_path: str | None = None) -> SshParams:
    """Merge a host entry with ~/.ssh/config (HostName, User, Port, IdentityFile, ProxyJump,
    UserKnownHostsFile); explicit entry values win."""
    path = Path(config_path or os.path.expanduser("~/.ssh/config"))
    cfg: dict[str, object] = {}
    if path.exists():
        try:
            cfg = dict(paramiko.SSHConfig.from_path(str(path)).lookup(host.address))
        except (OSError, paramiko.SSHException) as exc:
            raise TransportError(f"{host.name}: cannot read {path}: {exc}") from None
    hostname = str(cfg.get("hostname", host.address))
    port = host.port or int(str(cfg.get("port", 22)))
    user = host.user or (str(cfg["user"]) if "user" in cfg else None)
    identities: list[str] = []
    if host.identity:
        identities = [host.identity]
    elif "identityfile" in cfg:
        files = cfg["identityfile"]
        names = files if isinstance(files, list) else [files]
        identities = [os.path.expanduser(str(f)) for f in names
                      if os.path.exists(os.path.expanduser(str(f)))]
    known = host.known_hosts
    if known is None and "userknownhostsfile" in cfg:
        known = os.path.expanduser(str(cfg["userknownhostsfile"]).split()[0])
    jump = host.proxy_jump or (str(cfg["proxyjump"]) if "proxyjump" in cfg else None)
    if jump == "none":
        jump = None
    return SshParams(hostname, port, user, identities, known, jump)
