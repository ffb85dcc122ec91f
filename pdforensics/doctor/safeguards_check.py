"""Self-healing and hooks: each server's safeguards judged against its sglang version.

ADAPTER: the judge is `pdforensics.catalog.safeguards.judge_safeguards(version, argv, env)`
(branch catalog-env) when that module exists; until it is merged, `fallback_judge` below
stands in with the PD timeouts and --watchdog-timeout only (SGLang 0.5.x defaults). At merge
the lead switches `_judge` to a plain import and deletes the fallback (see docs/doctor.md)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pdforensics.cmdline import flag_value
from pdforensics.doctor.inputs import DoctorInput
from pdforensics.doctor.model import Check, Status
from pdforensics.loaded import HostView, ServiceView

#: the real judge's module (catalog-env); looked up at run time so this branch builds alone
REAL_MODULE = "pdforensics.catalog.safeguards"
STATUS: dict[str, Status] = {"ok": "ok", "disabled": "fail", "too_long": "fail",
                             "unarmed": "warn", "unknown": "warn"}
#: a timeout this many times its default no longer heals anything in practice
TOO_LONG_FACTOR = 10.0


@dataclass(frozen=True)
class Safeguard:
    """The fallback's stand-in for catalog.safeguards.Safeguard (same fields)."""

    key: str
    name: str
    value: str | None
    default: str | None
    state: str  # ok | disabled | too_long | unarmed | unknown
    fix: str


# key, flag or env var, default (SGLang 0.5.x: DESIGN.md), what it heals
_TIMEOUTS = (
    ("pd_bootstrap_timeout", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", 300.0),
    ("pd_waiting_timeout", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT", 300.0),
    ("pd_heartbeat_interval", "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", 5.0),
    ("watchdog_timeout", "--watchdog-timeout", 300.0),
)


def fallback_judge(version: str | None, argv: Sequence[str],
                   env: Mapping[str, str]) -> tuple[Safeguard, ...]:
    """The PD timeouts (env) and --watchdog-timeout (flag) against their 0.5.x defaults."""
    out = []
    for key, name, default in _TIMEOUTS:
        raw = flag_value(argv, name) if name.startswith("--") else env.get(name)
        out.append(_judge_timeout(key, name, raw, default))
    return tuple(out)


def _judge_timeout(key: str, name: str, raw: str | None, default: float) -> Safeguard:
    arm = f"{name} {default:g}" if name.startswith("--") else f"{name}={default:g}"
    shown = f"{default:g}"
    if raw is None:
        return Safeguard(key, name, None, shown, "ok", "")
    try:
        value = float(raw)
    except ValueError:
        return Safeguard(key, name, raw, shown, "unknown", f"set {arm}")
    if value <= 0:
        return Safeguard(key, name, raw, shown, "disabled", f"set {arm} (the default)")
    if value > default * TOO_LONG_FACTOR:
        return Safeguard(key, name, raw, shown, "too_long", f"set {arm} (the default) or a few "
                         "times it: at this value a stuck transfer is never given up on")
    return Safeguard(key, name, raw, shown, "ok", "")


def _judge() -> Callable[[str | None, Sequence[str], Mapping[str, str]], Sequence[Any]]:
    try:
        module = importlib.import_module(REAL_MODULE)
    except ImportError:
        return fallback_judge
    judge: Callable[[str | None, Sequence[str], Mapping[str, str]], Sequence[Any]] = \
        module.judge_safeguards
    return judge


def server_version(host: HostView, s: ServiceView) -> str | None:
    """The server's sglang version: /server_info, else its interpreter's packages."""
    return s.version() or host.packages.get("sglang")


def safeguard_checks(d: DoctorInput) -> Iterator[Check]:
    judge = _judge()
    for h in d.hosts:
        for s in h.services:
            if s.kind == "router" or not s.cmdline:
                continue
            version = server_version(h, s)
            for sg in judge(version, s.cmdline, s.environ):
                state = str(sg.state)
                value = "unset (default)" if sg.value is None else repr(sg.value)
                evidence = (f"{sg.name} = {value}, default {sg.default} in sglang "
                            f"{version or '(version unknown)'}: {state.replace('_', ' ')}")
                yield Check(f"safeguard.{sg.key}", h.name, STATUS.get(state, "warn"), evidence,
                            "" if state == "ok" else str(sg.fix), f"{s.role}:{s.port}")
