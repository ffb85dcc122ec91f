"""Checks of a cluster file made before any work: unknown keys (with "did you mean"), value
types, and the identity and known_hosts files each host names."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import Any

from pdforensics.errors import ConfigError

TOP_KEYS = frozenset({"cluster", "hosts", "k8s"})
CLUSTER_KEYS = frozenset({"name", "store", "accept_new_host_keys", "keep_last", "keep_days",
                          "slurm_job", "slurm_container", "slurm_ssh"})
HOST_KEYS = frozenset({"name", "address", "port", "user", "identity", "known_hosts", "sudo",
                       "services", "proxy_jump", "nvidia_smi", "simulated_gpu", "py_spy",
                       "runner", "runner_sudo"})
SERVICE_KEYS = frozenset({"role", "port", "unit", "metrics_port", "log_file"})

_TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str, "store": str, "accept_new_host_keys": bool, "address": str, "user": str,
    "identity": str, "known_hosts": str, "sudo": bool, "proxy_jump": str, "nvidia_smi": str,
    "simulated_gpu": bool, "py_spy": str, "unit": str, "log_file": str, "services": list,
    "slurm_job": (str, int), "slurm_container": str, "slurm_ssh": bool, "runner": bool,
    "runner_sudo": bool,
}


def check_keys(raw: dict[str, Any], allowed: Iterable[str], where: str) -> None:
    """Refuse an unknown key, suggesting the nearest known one; refuse a value of the wrong type."""
    known = sorted(allowed)
    for key in raw:
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else f" (known: {', '.join(known)})"
            raise ConfigError(f"{where}: unknown key {key!r}{hint}")
    for key, value in raw.items():
        want = _TYPES.get(key)
        if want is not None and not isinstance(value, want):
            name = want.__name__ if isinstance(want, type) else "/".join(t.__name__ for t in want)
            shown = {"str": "a string", "bool": "true or false", "list": "a list of tables",
                     "str/int": "a string or a number"}[name]
            raise ConfigError(f"{where}.{key} must be {shown}, not {value!r}")


def check_host_files(identity: str | None, known_hosts: str | None, where: str) -> None:
    """The identity file must be readable, known_hosts present and well formed (named if not)."""
    from pdforensics.config.known_hosts import check_known_hosts

    if identity is not None:
        if not os.path.isfile(identity):
            raise ConfigError(f"{where}: identity file {identity} not found")
        if not os.access(identity, os.R_OK):
            raise ConfigError(f"{where}: identity file {identity} is not readable")
    if known_hosts is not None:
        check_known_hosts(known_hosts, where)
