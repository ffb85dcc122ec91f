"""The safeguards and hooks of each sglang release, generated from its wheel and shipped as a
small JSON file (data/safeguard_defaults.json), so doctor and rules can cite "the default of
the server's sglang version" without shipping one full catalog per release.

`build_table` reads each release's catalog (flags and env vars read anywhere in its source)
and records, per safeguard, whether that release has it, under which flag or env var, with
which default and which modules read it. Hooks read by CUDA, NCCL or torch rather than by
sglang (`external`) are recorded too, with whether sglang itself reads or sets them.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pdforensics.catalog.model import Catalog
from pdforensics.catalog.source import SourceTree, open_source
from pdforensics.errors import PdforensicsError

Kind = Literal["env", "flag", "external"]
Measure = Literal["seconds", "count", "switch", "path", "level"]

#: The releases the shipped table is built from: the first PD release to the newest.
TABLE_VERSIONS = ("0.4.6", "0.4.10", "0.5.9", "0.5.23")
SHIPPED = Path(__file__).resolve().parent / "data" / "safeguard_defaults.json"
SCHEMA = 1


@dataclass(frozen=True)
class SafeguardSpec:
    """One safeguard or hook: where it is set and how its value is read."""

    key: str  # stable: doctor check keys and rule evidence use it
    title: str
    kind: Kind
    name: str  # the flag (`--x`) or env var
    measure: Measure
    self_healing: bool = False  # a timeout that ends a wedge by itself (SAFEGUARDS_DISABLED)


SPECS: tuple[SafeguardSpec, ...] = (
    SafeguardSpec("pd_bootstrap_timeout", "PD bootstrap timeout (prefill)", "env",
                  "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "seconds", True),
    SafeguardSpec("pd_waiting_timeout", "PD waiting-for-KV timeout (decode)", "env",
                  "SGLANG_DISAGGREGATION_WAITING_TIMEOUT", "seconds", True),
    SafeguardSpec("pd_heartbeat_interval", "PD heartbeat interval (decode -> prefill)", "env",
                  "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", "seconds", True),
    SafeguardSpec("pd_heartbeat_max_failure", "PD heartbeat failures before a prefill is "
                  "declared dead", "env", "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE",
                  "count", True),
    SafeguardSpec("watchdog_timeout", "scheduler watchdog (hard)", "flag",
                  "--watchdog-timeout", "seconds", True),
    SafeguardSpec("soft_watchdog_timeout", "soft watchdog (dumps stacks, does not kill)", "flag",
                  "--soft-watchdog-timeout", "seconds"),
    SafeguardSpec("pyspy_dump_before_crash", "py-spy dump before a crash", "env",
                  "SGLANG_PYSPY_DUMP_BEFORE_CRASH", "switch"),
    SafeguardSpec("crash_dump_folder", "crash dump folder (last requests before a crash)",
                  "flag", "--crash-dump-folder", "path"),
    SafeguardSpec("metrics_for_all_schedulers", "metrics from every scheduler rank", "flag",
                  "--enable-metrics-for-all-schedulers", "switch"),
    SafeguardSpec("log_requests", "request logging", "flag", "--log-requests", "switch"),
    SafeguardSpec("log_requests_level", "request logging level", "flag",
                  "--log-requests-level", "level"),
    SafeguardSpec("cuda_user_coredump", "CUDA user-triggered core dump", "external",
                  "CUDA_ENABLE_USER_TRIGGERED_COREDUMP", "switch"),
    SafeguardSpec("cuda_coredump_pipe", "CUDA core dump trigger pipe", "external",
                  "CUDA_COREDUMP_PIPE", "path"),
    SafeguardSpec("nccl_flight_recorder", "NCCL flight recorder (torch)", "external",
                  "TORCH_NCCL_TRACE_BUFFER_SIZE", "count"),
    SafeguardSpec("collective_debug_pipe", "collective debug dump pipe (torch)", "external",
                  "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "path"),
    SafeguardSpec("nccl_debug", "NCCL log level", "external", "NCCL_DEBUG", "level"),
)
SPEC_BY_KEY = {s.key: s for s in SPECS}


def crash_dump_armed(tree: SourceTree) -> dict[str, list[str]]:
    """External hook env var -> modules that name it next to `crash_dump_folder`
    (sglang setting the hook itself when --crash-dump-folder is given)."""
    names = [s.name for s in SPECS if s.kind == "external"]
    out: dict[str, list[str]] = {}
    for rel in tree.names():
        src = tree.read(rel)
        if not src or "crash_dump_folder" not in src:
            continue
        for name in names:
            if f'"{name}"' in src:
                out.setdefault(name, []).append(rel)
    return out


def entry(spec: SafeguardSpec, catalog: Catalog, armed: dict[str, list[str]] | None = None
          ) -> dict[str, Any]:
    """What release `catalog` has for `spec` (JSON-ready)."""
    if spec.kind == "flag":
        flag = catalog.flag(spec.name)
        if flag is None:
            return {"present": False}
        return {"present": True, "default": flag.default, "default_expr": flag.default_expr,
                "type": flag.type, "action": flag.action, "origin": flag.origin}
    env = catalog.env(spec.name)
    if spec.kind == "env":
        if env is None:
            return {"present": False}
        return {"present": True, "default": env.default, "default_expr": env.default_expr,
                "type": env.type, "origin": env.origin, "read_by": list(env.read_by)}
    out: dict[str, Any] = {"present": True, "default": None,
                           "read_by_sglang": list(env.read_by) if env is not None else []}
    if armed and armed.get(spec.name):
        out["armed_by_flag"] = "--crash-dump-folder"
        out["armed_in"] = armed[spec.name]
    return out


def build_table(sources: list[Path]) -> dict[str, Any]:
    """The table for the wheels or trees in `sources` (one per release)."""
    from pdforensics.catalog.build import build_from_tree

    versions: dict[str, Any] = {}
    for src in sources:
        tree = open_source(Path(src))
        try:
            cat = build_from_tree(tree)
            armed = crash_dump_armed(tree)
            versions[cat.version] = {
                "source": cat.source,
                "safeguards": {s.key: entry(s, cat, armed) for s in SPECS},
            }
        finally:
            tree.close()
    specs = {s.key: {"title": s.title, "kind": s.kind, "name": s.name, "measure": s.measure,
                     "self_healing": s.self_healing} for s in SPECS}
    return {"schema": SCHEMA, "specs": specs, "versions": dict(sorted(
        versions.items(), key=lambda kv: version_key(kv[0])))}


def version_key(version: str) -> tuple[int, ...]:
    """`0.5.10rc1` -> (0, 5, 10): the leading numbers, for ordering releases."""
    out = []
    for part in version.strip().lstrip("v").split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) < len(part):
            break
    return tuple(out)


def write_table(table: dict[str, Any], out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".safeguards-", suffix=".json", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(table, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


@lru_cache(maxsize=1)
def load_shipped_table() -> dict[str, Any]:
    """The shipped table (read once)."""
    try:
        data: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PdforensicsError(f"shipped safeguard table unreadable: {SHIPPED.name}: {exc}") from exc
    if data.get("schema") != SCHEMA or not isinstance(data.get("versions"), dict):
        raise PdforensicsError(f"shipped safeguard table has an unknown schema: {SHIPPED.name}")
    return data


def cli_safeguards(srcs: list[str], out: str | None) -> Path:
    """`pdforensics catalog safeguards [--from SRC ...] [-o OUT]`: build and write the table.

    Without --from, the TABLE_VERSIONS wheels are taken from the cache (downloaded with
    `pip download --no-deps` when missing)."""
    from pdforensics.catalog.fetch import fetch_wheel

    paths = [Path(s).expanduser() for s in srcs] or [fetch_wheel(v) for v in TABLE_VERSIONS]
    target = Path(out) if out else Path.cwd() / "safeguard_defaults.json"
    try:
        return write_table(build_table(paths), target)
    except OSError as exc:
        raise PdforensicsError(f"cannot write {target}: {exc.strerror or exc}") from exc
