"""Judge a server's safeguards and hooks against the defaults of its sglang version.

Stable API (doctor and the SAFEGUARDS_DISABLED rule call it)::

    judge_safeguards(version: str | None, argv: Sequence[str], env: Mapping[str, str],
                     *, too_long_s: float = 3600.0) -> tuple[Safeguard, ...]

One `Safeguard` per entry of `safeguard_table.SPECS`, in that order, each with its stable
`key`, the flag or env var `name`, the effective `value` (as text, None when unset and
without default) and where it came from (`source`: "argv", "env", "default", "none"), the
`default` of the server's version from the shipped table, the version that default was
read from (`default_version`, the nearest known release when the exact one is missing;
`default_note` says which), a `state` and the exact `fix` that arms it:

- ok        armed with a value that heals or records a wedge
- disabled  switched off, or a value that never fires (inf/nan)
- too_long  a timeout of `too_long_s` (an hour) or more: a wedge never heals by itself
- unarmed   a hook that is off by default and was not turned on
- absent    the server's sglang version has no such safeguard
- unknown   a value that cannot be read (not a number), or 0 or less
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pdforensics.catalog.cmdline import read_flags
from pdforensics.catalog.safeguard_table import (
    SPECS,
    SafeguardSpec,
    load_shipped_table,
    version_key,
)

State = Literal["ok", "disabled", "too_long", "unarmed", "absent", "unknown"]
_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f", ""}
# how each hook is armed when its value is missing (the exact setting to add)
_ARM = {
    "soft_watchdog_timeout": "--soft-watchdog-timeout 300",
    "crash_dump_folder": "--crash-dump-folder /var/tmp/sglang-crash",
    "metrics_for_all_schedulers": "--enable-metrics-for-all-schedulers",
    "log_requests": "--log-requests",
    "log_requests_level": "--log-requests --log-requests-level 1",
    "pyspy_dump_before_crash": "SGLANG_PYSPY_DUMP_BEFORE_CRASH=1",
    "cuda_user_coredump": "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1",
    "cuda_coredump_pipe": "CUDA_COREDUMP_PIPE=/tmp/corepipe.cuda.%h.%p",
    "nccl_flight_recorder": "TORCH_NCCL_TRACE_BUFFER_SIZE=2000",
    "collective_debug_pipe": "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/nccl_trace_pipe_rank_",
    "nccl_debug": "NCCL_DEBUG=WARN",
}
_HEARTBEAT_FLOOR_S = 2.0  # sglang raises a shorter heartbeat interval to 2 s


@dataclass(frozen=True)
class Safeguard:
    """One safeguard or hook of one server, judged."""

    key: str
    title: str
    name: str  # flag or env var
    value: str | None
    source: str  # argv | env | default | none
    default: Any
    default_version: str | None
    default_note: str
    state: State
    detail: str  # why, in a few words
    fix: str | None  # the exact flag or env var that arms it; None when ok


def nearest_version(version: str | None, known: Sequence[str]) -> tuple[str | None, str]:
    """The known release whose defaults apply to `version`, and a note saying which."""
    if not known:
        return None, "no sglang release known"
    ordered = sorted(known, key=version_key)
    if version is None:
        return ordered[-1], f"sglang version unknown: defaults of {ordered[-1]}, the newest known"
    v = version.strip().lstrip("v")
    if v in known:
        return v, f"default of sglang {v}"
    lower = [k for k in ordered if version_key(k) <= version_key(v)]
    pick = lower[-1] if lower else ordered[0]
    return pick, f"sglang {v} not in the table: defaults of {pick}, the nearest known release"


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _shown(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _effective(spec: SafeguardSpec, entry: Mapping[str, Any], flags: Mapping[str, tuple[str, ...]],
               env: Mapping[str, str]) -> tuple[str | None, str]:
    if spec.kind == "flag":
        if spec.name in flags:
            words = flags[spec.name]
            return (" ".join(words) if words else "true"), "argv"
    elif spec.name in env:
        return env[spec.name], "env"
    default = entry.get("default") if entry.get("present") else None
    return (_shown(default), "default") if default is not None else (None, "none")


def _judge_seconds(spec: SafeguardSpec, value: str | None, too_long_s: float,
                   floor: float = 0.0) -> tuple[State, str]:
    n = _number(value)
    if value is None:
        return ("unarmed", "not set") if not spec.self_healing else ("unknown", "no value")
    if n is None:
        return "unknown", f"{value!r} is not a number"
    if math.isnan(n) or math.isinf(n):
        return "disabled", f"{value}: never fires"
    if n <= 0:
        return "unknown", f"{value}: 0 or less does not give a usable timeout"
    eff = max(n, floor)
    if eff >= too_long_s:
        return "too_long", f"{_shown(n)} s ({eff / 3600:.1f} h): a wedge does not heal by itself"
    return "ok", f"{_shown(n)} s"


def _judge_switch(value: str | None) -> tuple[State, str]:
    if value is None:
        return "unarmed", "not set"
    low = value.strip().lower()
    if low in _TRUE:
        return "ok", "on"
    if low in _FALSE:
        return "disabled", f"{value!r}: off"
    return "unknown", f"{value!r} is not a switch value"


def _judge_one(spec: SafeguardSpec, entry: Mapping[str, Any], value: str | None,
               ctx: Mapping[str, str | None], too_long_s: float) -> tuple[State, str]:
    if spec.measure == "seconds":
        floor = _HEARTBEAT_FLOOR_S if spec.key == "pd_heartbeat_interval" else 0.0
        return _judge_seconds(spec, value, too_long_s, floor)
    if spec.key == "pd_heartbeat_max_failure":
        n, interval = _number(value), _number(ctx.get("pd_heartbeat_interval"))
        if n is None or interval is None:
            return "unknown", f"{value!r} or the heartbeat interval is not a number"
        if math.isinf(n) or math.isnan(n):
            return "disabled", f"{value}: a dead prefill is never declared dead"
        span = max(interval, _HEARTBEAT_FLOOR_S) * max(n, 1)
        if span >= too_long_s:
            return "too_long", (f"{_shown(n)} failures x {_shown(interval)} s = "
                                f"{span / 3600:.1f} h before a dead prefill is noticed")
        return "ok", f"{_shown(n)} failures ({_shown(span)} s)"
    if spec.measure == "switch":
        armed_by = entry.get("armed_by_flag")
        if value is None and armed_by and ctx.get(armed_by):
            return "ok", f"armed by {armed_by}"
        state, detail = _judge_switch(value)
        if state == "disabled" and ctx.get(f"{spec.key}:source") == "default":
            return "unarmed", "off by default"
        return state, detail
    if spec.measure == "path" or spec.key == "nccl_debug":
        armed_by = entry.get("armed_by_flag")
        if value is None and armed_by and ctx.get(armed_by):
            return "ok", f"armed by {armed_by}"
        return ("ok", value) if value else ("unarmed", "not set")
    if spec.key == "log_requests_level":
        return ("ok", f"level {value}") if ctx.get("--log-requests") else \
            ("unarmed", "request logging is off (--log-requests)")
    n = _number(value)  # counts: the flight recorder's buffer size
    return ("ok", f"{value} entries") if n and n > 0 else ("unarmed", "not set or 0")


def _fix(spec: SafeguardSpec, state: State, default: Any, first_with: str | None) -> str | None:
    if state == "ok":
        return None
    if state == "absent":
        return (f"upgrade sglang: {spec.name} arrived in {first_with}" if first_with
                else f"no sglang release known has {spec.name}")
    if spec.self_healing:
        value = _shown(default) or "300"
        return f"{spec.name} {value}" if spec.kind == "flag" else f"{spec.name}={value}"
    return _ARM.get(spec.key, spec.name)


def _first_with(key: str, versions: Mapping[str, Any]) -> str | None:
    have = [v for v, e in versions.items() if e["safeguards"].get(key, {}).get("present")]
    return min(have, key=version_key) if have else None


def _later_with(key: str, picked: str | None, version: str | None,
                versions: Mapping[str, Any]) -> str | None:
    """For a version missing from the table, the next known release having `key`, when
    the release picked for it lacks it (the version may or may not have it)."""
    if picked is None or version is None or version.strip().lstrip("v") in versions:
        return None
    after = sorted((v for v in versions if version_key(v) > version_key(version)), key=version_key)
    if not after:
        return None
    nxt = after[0]
    return nxt if versions[nxt]["safeguards"].get(key, {}).get("present") else None


def judge_safeguards(version: str | None, argv: Sequence[str], env: Mapping[str, str],
                     *, too_long_s: float = 3600.0) -> tuple[Safeguard, ...]:
    """Every safeguard of one server: its value, its version's default, state and fix."""
    table = load_shipped_table()
    versions: Mapping[str, Any] = table["versions"]
    picked, note = nearest_version(version, list(versions))
    entries: Mapping[str, Any] = versions[picked]["safeguards"] if picked else {}
    flags = read_flags(argv)
    values = {s.key: _effective(s, entries.get(s.key, {}), flags, env) for s in SPECS}
    ctx: dict[str, str | None] = {k: v for k, (v, _src) in values.items()}
    ctx.update({f"{k}:source": src for k, (_v, src) in values.items()})
    ctx.update({name: "1" for name in flags})
    out = []
    for spec in SPECS:
        entry = entries.get(spec.key, {"present": False})
        value, source = values[spec.key]
        later = _later_with(spec.key, picked, version, versions)
        if not entry.get("present") and later is not None and value is not None:
            state, detail = _judge_one(spec, versions[later]["safeguards"][spec.key], value,
                                       ctx, too_long_s)
            detail += f" (sglang {picked} lacks it, {later} has it)"
        elif not entry.get("present") and later is not None:
            state, detail = "unknown", (f"sglang {version} lies between {picked} (without "
                                        f"{spec.name}) and {later} (with it)")
        elif not entry.get("present"):
            state = "absent"
            detail = f"sglang {picked} has no {spec.name}" + (
                f" (set to {value!r}, which it ignores)" if value is not None else "")
        else:
            state, detail = _judge_one(spec, entry, value, ctx, too_long_s)
        default = entry.get("default") if entry.get("present") else None
        ref = versions[later]["safeguards"][spec.key] if later is not None else entry
        out.append(Safeguard(
            key=spec.key, title=spec.title, name=spec.name, value=value, source=source,
            default=default, default_version=picked, default_note=note, state=state,
            detail=detail,
            fix=_fix(spec, state, ref.get("default"), _first_with(spec.key, versions))))
    return tuple(out)
