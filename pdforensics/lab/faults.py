"""The faults the lab can simulate."""

from __future__ import annotations

from typing import Any

from pdforensics.errors import PdforensicsError

FAULTS: tuple[str, ...] = (
    "healthy",
    "transfer-stuck",
    "kv-full",
    "forgotten-requests",
    "rank-stuck",
    "hung-endpoint",
    "process-dead",
    "busy",
    "probe-hang",
    "stranded-bootstrap",
    "prealloc-leak",
    "clock-skew",
    "safeguards-off",
    "breaker-open",
    "decode-only",
)

# The real engine lab's faults (lab/engine/faults.py makes them; `lab up --engine sglang`).
ENGINE_FAULTS: tuple[str, ...] = (
    "healthy", "rank-stopped", "forgotten-requests", "prefill-frozen", "kv-full", "watchdog",
    "server-killed", "breaker-open",
)
ALL_FAULTS: tuple[str, ...] = FAULTS + tuple(f for f in ENGINE_FAULTS if f not in FAULTS)

_HUGE = "100000"  # seconds (27.8 h) / heartbeat failures: a wedge never heals by itself
# Faults set at launch (flags and env vars by role); lab_up applies them, set_fault cannot.
LAUNCH_FAULTS: dict[str, dict[str, tuple[tuple[str, ...], dict[str, str]]]] = {
    "safeguards-off": {
        "prefill": (("--watchdog-timeout", _HUGE),
                    {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": _HUGE}),
        "decode": (("--watchdog-timeout", _HUGE),
                   {"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": _HUGE,
                    "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": _HUGE}),
    },
}


def launch_settings(fault: str) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """(extra args by role, extra env by role) that `fault` needs at launch."""
    roles = LAUNCH_FAULTS.get(fault, {})
    return ({r: list(a) for r, (a, _e) in roles.items()},
            {r: dict(e) for r, (_a, e) in roles.items()})


def add_launch_settings(record: dict[str, Any], fault: str) -> None:
    """Append what `fault` needs at launch to a lab record's extra_args / extra_env."""
    args, env = launch_settings(fault)
    for role, words in args.items():
        record["extra_args"][role] = record["extra_args"].get(role, []) + words
    for role, values in env.items():
        record["extra_env"][role] = {**record["extra_env"].get(role, {}), **values}


def check_switchable(fault: str, launched_with: str | None) -> None:
    """A launch-time fault cannot be switched on in a running lab started without it."""
    if fault in LAUNCH_FAULTS and launched_with != fault:
        raise PdforensicsError(f"{fault} is set when the servers start: `pdforensics lab down`, "
                               f"then `pdforensics lab up --fault {fault}`")
