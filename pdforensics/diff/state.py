"""The configuration a capture shows, per host and service, with volatile values left out.

None means "not captured" (unreadable environ, pip freeze that timed out, ...), which the
diff reports as unknown, never as everything removed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pdforensics.catalog.cmdline import parse_flags
from pdforensics.catalog.model import Catalog
from pdforensics.collectors import REGISTRY
from pdforensics.collectors.gpu import NVIDIA_SMI
from pdforensics.collectors.versions import PIP_FREEZE
from pdforensics.diff.units import UnitFile, parse_unit_cat
from pdforensics.errors import ParseError
from pdforensics.parsers.versions import parse_nvidia_smi_version, parse_uname
from pdforensics.views.loaded import HostView, LoadedCapture, ServiceView, load_capture

# Env vars that change on every start or login without changing the configuration.
VOLATILE_ENV = frozenset({
    "_", "OLDPWD", "SHLVL", "INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID",
    "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "XDG_SESSION_ID", "TMUX",
    "TMUX_PANE", "WINDOWID", "TERM_SESSION_ID", "LISTEN_PID", "LISTEN_FDS", "NOTIFY_SOCKET",
    "WATCHDOG_PID", "WATCHDOG_USEC", "MONITOR_PID", "TRIGGER_UNIT", "SECONDS", "RANDOM",
})
VOLATILE_ENV_PREFIXES = ("PYTEST_", "COLUMNS", "LINES")
# Sources the diff never reads (those not declared `config`): load_capture(path,
# skip_sources=NOT_CONFIG) keeps it fast.
NOT_CONFIG = frozenset(name for name, src in REGISTRY.items() if not src.config)
# Flags whose value is per-process plumbing, not configuration.
VOLATILE_FLAGS = frozenset({"--nccl-init-addr", "--dist-init-addr-ephemeral"})


@dataclass(frozen=True)
class ServiceConfig:
    scope: str  # "decode-0/decode" (":port" appended when a host runs two of a role)
    host: str
    role: str
    kind: str
    port: int
    metrics_port: int | None
    tp_size: int
    dp_size: int
    ranks: tuple[str, ...]
    flags: dict[str, str | None] | None
    env: dict[str, str] | None
    sglang_version: str | None
    unit: str | None
    unit_files: tuple[UnitFile, ...] | None


@dataclass(frozen=True)
class HostConfig:
    name: str
    reachable: bool
    kernel: str | None
    driver: str | None
    cuda: str | None
    packages: dict[str, str] | None
    services: tuple[ServiceConfig, ...]


@dataclass(frozen=True)
class ConfigState:
    """Everything the diff compares, from one capture."""

    bundle: str
    cluster: str
    taken_at: float
    hosts: tuple[HostConfig, ...]

    def host(self, name: str) -> HostConfig | None:
        return next((h for h in self.hosts if h.name == name), None)


def load_state(path: str | Path, catalog: Catalog | None = None) -> ConfigState:
    """A bundle's configuration, reading only the sources the diff compares."""
    return extract_state(load_capture(path, skip_sources=NOT_CONFIG), catalog)


def extract_state(capture: LoadedCapture, catalog: Catalog | None = None) -> ConfigState:
    """Read the configuration out of a loaded capture."""
    return ConfigState(bundle=str(capture.path), cluster=capture.cluster,
                       taken_at=capture.started_at,
                       hosts=tuple(_host(capture, h, catalog) for h in capture.hosts))


def _host(capture: LoadedCapture, h: HostView, catalog: Catalog | None) -> HostConfig:
    driver = cuda = None
    entry = next((e for e in capture.bundle.find(h.name, NVIDIA_SMI.name) if e.ok), None)
    if entry is not None:
        try:
            v = parse_nvidia_smi_version(capture.bundle.text(entry))
            driver, cuda = v.driver, v.cuda
        except ParseError:
            pass
    kernel = None
    if h.uname:
        try:
            u = parse_uname(h.uname)
            kernel = u.kernel_release if u is not None else None
        except ParseError:
            kernel = h.uname.strip()[:200] or None
    has_freeze = any(e.ok for e in capture.bundle.find(h.name, PIP_FREEZE.name))
    counts: dict[str, int] = {}
    for s in h.services:
        counts[s.role] = counts.get(s.role, 0) + 1
    services = tuple(_service(s, counts[s.role] > 1, catalog, h.packages) for s in h.services)
    return HostConfig(name=h.name, reachable=h.reachable, kernel=kernel, driver=driver, cuda=cuda,
                      packages=dict(h.packages) if has_freeze else None, services=services)


def server_version(s: ServiceView, packages: dict[str, str] | None = None) -> str | None:
    """sglang's version for one server: /server_info, else /v1/loads (answered while the
    scheduler is wedged), else the host's `pip freeze`. None for routers and when unknown."""
    if s.kind != "server":
        return None
    version = s.version()
    if version:
        return version
    for key in ("loads", "get_load"):
        f = s.fetches.get(key)
        doc = f.json() if f is not None and f.status == 200 else None
        if isinstance(doc, dict) and isinstance(doc.get("version"), str) and doc["version"]:
            return str(doc["version"])
    return (packages or {}).get("sglang")


def _service(s: ServiceView, by_port: bool, catalog: Catalog | None,
             packages: dict[str, str] | None = None) -> ServiceConfig:
    scope = f"{s.host}/{s.role}:{s.port}" if by_port else f"{s.host}/{s.role}"
    root = s.root
    flags: dict[str, str | None] | None = None
    if root is not None and root.cmdline:
        flags = {k: v for k, v in parse_flags(
            root.cmdline, catalog if s.kind == "server" else None).items()
            if k not in VOLATILE_FLAGS}
    env: dict[str, str] | None = None
    if root is not None and root.environ:
        env = {k: v for k, v in root.environ
               if k not in VOLATILE_ENV and not k.startswith(VOLATILE_ENV_PREFIXES)}
    version = server_version(s, packages)
    return ServiceConfig(
        scope=scope, host=s.host, role=s.role, kind=s.kind, port=s.port,
        metrics_port=s.metrics_port, tp_size=s.tp_size, dp_size=s.dp_size,
        ranks=tuple(sorted(p.info.rank for p in s.ranks if p.info.rank)),
        flags=flags, env=env, sglang_version=version, unit=s.unit,
        unit_files=parse_unit_cat(s.unit_file) if s.unit_file else None,
    )


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in sorted(obj.items())}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def host_fingerprint(host: HostConfig) -> str:
    """sha256 (16 hex) of a host's configuration; equal fingerprints mean nothing to diff."""
    doc = _jsonable(asdict(host))
    doc.pop("reachable", None)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
