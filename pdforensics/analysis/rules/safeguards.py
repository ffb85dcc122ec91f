"""SAFEGUARDS_DISABLED: a server's self-healing timeouts are off or an hour or more."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.catalog.safeguard_table import SPEC_BY_KEY
from pdforensics.catalog.safeguards import Safeguard, judge_safeguards
from pdforensics.views.loaded import ServiceView

# the self-healing timeouts each role reads (sglang reads the PD ones per disaggregation mode)
ROLE_KEYS: dict[str, tuple[str, ...]] = {
    "prefill": ("pd_bootstrap_timeout", "watchdog_timeout"),
    "decode": ("pd_waiting_timeout", "pd_heartbeat_interval", "pd_heartbeat_max_failure",
               "watchdog_timeout"),
    "unified": ("watchdog_timeout",),
}
BAD_STATES = ("disabled", "too_long")


def server_version(ctx: Context, svc: ServiceView) -> str | None:
    """The sglang version from /server_info, else from the host's package list."""
    v = svc.version()
    if v:
        return v
    host = next((h for h in ctx.capture.hosts if h.name == svc.host), None)
    return host.packages.get("sglang") if host is not None else None


def _evidence(svc: ServiceView, s: Safeguard) -> Evidence:
    where = {"argv": "cmdline", "env": "environ"}.get(s.source, s.source)
    default = "unknown" if s.default is None else f"{s.default:g}" \
        if isinstance(s.default, float) else str(s.default)
    return Evidence(svc.host, f"{svc.role}:{svc.port} {where}",
                    f"{s.name}={s.value}: {s.detail}; {s.default_note}: {default}")


@rule("SAFEGUARDS_DISABLED", needs=(Need.SERVERS,), rank=75)
def safeguards_disabled(ctx: Context) -> Iterator[Finding]:
    """PD bootstrap/waiting/heartbeat timeouts or --watchdog-timeout disabled or >= 1 h."""
    for svc in ctx.servers():
        if not svc.cmdline:
            continue  # no command line seen: nothing to judge (doctor says why)
        keys = ROLE_KEYS.get(svc.role, ())
        judged = judge_safeguards(server_version(ctx, svc), svc.cmdline, svc.environ)
        bad = [s for s in judged if s.key in keys and s.state in BAD_STATES]
        if not bad:
            continue
        names = ", ".join(SPEC_BY_KEY[s.key].name for s in bad)
        fixes = "; ".join(s.fix for s in bad if s.fix)
        yield Finding(
            "SAFEGUARDS_DISABLED", "warning",
            f"{svc.label}: self-healing timeouts off or >= 1 h ({names})",
            tuple(_evidence(svc, s) for s in bad),
            "A wedge on this server will not heal by itself: requests stay stuck until "
            f"someone restarts it. Set {fixes} (the default of its sglang version), "
            "then restart the server.",
            section="config", subject=svc.label)
