"""Cluster file (TOML) and command-line host specs -> ClusterSpec."""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pdforensics.config.check import CLUSTER_KEYS, HOST_KEYS, SERVICE_KEYS, TOP_KEYS, check_host_files, check_keys
from pdforensics.errors import ConfigError
from pdforensics.model import ClusterSpec, HostSpec, ServiceSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROLES = ("router", "prefill", "decode", "unified")


def load_cluster_file(path: str | Path) -> ClusterSpec:
    """Read a cluster file; relative identity/known_hosts paths are relative to it."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"cluster file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read cluster file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    return cluster_from_dict(data, base=path.parent, origin=str(path))


def cluster_from_dict(data: dict[str, Any], base: Path, origin: str = "cluster") -> ClusterSpec:
    """Validate a parsed cluster file: every key known, every file a host names present."""
    check_keys(data, TOP_KEYS, origin)
    cluster = data.get("cluster", {})
    if not isinstance(cluster, dict):
        raise ConfigError(f"{origin}: [cluster] must be a table")
    check_keys(cluster, CLUSTER_KEYS, f"{origin}: [cluster]")
    hosts_raw = data.get("hosts", [])
    k8s = data.get("k8s")  # [k8s]: pods are the hosts (pdforensics/k8s/settings.py checks it)
    if not isinstance(hosts_raw, list) or not (hosts_raw or k8s is not None or "slurm_job" in cluster):
        raise ConfigError(f"{origin}: at least one [[hosts]] entry (or a [k8s] table, or slurm_job) is needed")
    hosts = tuple(_host(h, i, base, origin) for i, h in enumerate(hosts_raw))
    names = [h.name for h in hosts]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{origin}: duplicate host names: {', '.join(dupes)}")
    store = cluster.get("store")
    return ClusterSpec(
        name=_safe_name(str(cluster.get("name", "cluster")), origin),
        hosts=hosts,
        store=str((base / store).resolve()) if isinstance(store, str) else None,
        accept_new_host_keys=bool(cluster.get("accept_new_host_keys", False)),
        extra={**{k: v for k, v in cluster.items() if k not in {"name", "store"}},
               **({"k8s": k8s} if k8s is not None else {})},
    )


def _host(raw: Any, index: int, base: Path, origin: str) -> HostSpec:
    where = f"{origin}: hosts[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    check_keys(raw, HOST_KEYS, where)
    if "address" not in raw:
        raise ConfigError(f"{where}: 'address' is required (a host, an ssh alias, or \"local\")")
    address = str(raw["address"])
    name = _safe_name(str(raw.get("name", address)), where)
    services = tuple(_service(s, f"{where}.services[{j}]") for j, s in
                     enumerate(raw.get("services", [])))
    identity, known_hosts = _rel(raw.get("identity"), base), _rel(raw.get("known_hosts"), base)
    check_host_files(identity, known_hosts, f"{where} ({name})")
    return HostSpec(
        name=name, address=address,
        port=_int(raw.get("port"), f"{where}.port"),
        user=raw.get("user"),
        identity=identity,
        known_hosts=known_hosts,
        sudo=bool(raw.get("sudo", False)),
        services=services,
        proxy_jump=raw.get("proxy_jump"),
        nvidia_smi=str(raw.get("nvidia_smi", "nvidia-smi")),
        simulated_gpu=bool(raw.get("simulated_gpu", False)),
        py_spy=str(raw.get("py_spy", "py-spy")),
        runner=bool(raw.get("runner", True)),
        runner_sudo=bool(raw.get("runner_sudo", True)),
    )


def _service(raw: Any, where: str) -> ServiceSpec:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    check_keys(raw, SERVICE_KEYS, where)
    role = raw.get("role")
    if role not in ROLES:
        raise ConfigError(f"{where}: role must be one of {', '.join(ROLES)}, not {role!r}")
    port = _int(raw.get("port"), f"{where}.port")
    if port is None:
        raise ConfigError(f"{where}: 'port' is required")
    return ServiceSpec(role=role, port=port, unit=raw.get("unit"),
                       metrics_port=_int(raw.get("metrics_port"), f"{where}.metrics_port"),
                       log_file=raw.get("log_file"))


def _int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ConfigError(f"{where} must be a port number, not {value!r}")
    return value


def _rel(value: Any, base: Path) -> str | None:
    if value is None:
        return None
    p = Path(str(value)).expanduser()
    return str(p if p.is_absolute() else (base / p).resolve())


def _safe_name(name: str, where: str) -> str:
    """Names become directory names in the bundle: keep them plain."""
    ok = name and all(c.isalnum() or c in "-_." for c in name) and not name.startswith(".")
    if not ok:
        raise ConfigError(f"{where}: name {name!r} may only hold letters, digits, '-', '_', '.'")
    return name


def hosts_from_args(
    specs: Sequence[str], identity: str | None, known_hosts: str | None, sudo: bool = False
) -> ClusterSpec:
    """`[user@]host[:port]` arguments -> a cluster whose services are discovered."""
    hosts = []
    for spec in specs:
        user, _, hostport = spec.rpartition("@")
        host, port = hostport, None
        if hostport.startswith("["):  # [v6]:port
            inner, _, rest = hostport[1:].partition("]")
            host, port = inner, rest.lstrip(":") or None
        elif hostport.count(":") == 1:
            host, port = hostport.split(":")
        if not host:
            raise ConfigError(f"host {spec!r}: empty host name")
        try:
            port_n = int(port) if port else None
        except ValueError:
            raise ConfigError(f"host {spec!r}: port {port!r} is not a number") from None
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in host)
        hosts.append(HostSpec(name=name, address=host, port=port_n, user=user or None,
                              identity=identity, known_hosts=known_hosts, sudo=sudo))
    return ClusterSpec(name="adhoc", hosts=tuple(hosts))


def local_cluster() -> ClusterSpec:
    """No hosts, no cluster file: the local machine, services discovered."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in socket.gethostname()) or "local"
    return ClusterSpec(name=name, hosts=(HostSpec(name=name, address="local"),))
