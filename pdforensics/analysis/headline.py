"""The first screen's two lines: what restores service now, and where to look for the cause.

*Mitigate now* comes from the findings that set the verdict: which servers to restart (named,
with their partner when a PD hop is frozen), which worker the router lacks, or that nothing
needs a restart. *Diagnose* is the diagnosis's headline when the analysis has one (the PD
request-path model), else the first sentence of the top finding's next step. Both are our
prose around names from the capture; the renderers escape them like any other text.
"""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics import linear
from pdforensics.analysis.findings import Evidence, Finding, Verdict
from pdforensics.analysis.since import setting_findings
from pdforensics.views.loaded import LoadedCapture

#: keys whose trouble a restart of the PD pair clears (the wedge does not heal by itself)
RESTART_PAIR = frozenset({
    "DECODE_TRANSFER_STUCK", "DECODE_PREALLOC_STUCK", "PREFILL_BOOTSTRAP_STUCK",
    "PREFILL_INFLIGHT_STUCK", "REQUESTS_FROZEN", "ALL_RANKS_STUCK", "RANK_OUTLIER",
    "SCHEDULER_ENDPOINT_HANG", "SCHEDULER_PROBE_HANG", "FORGOTTEN_REQUESTS", "STRANDED_BOOTSTRAP",
    "PROCESS_STATE", "GPU_IDLE_WITH_WORK", "ENDPOINT_HANG", "PREALLOC_LEAK"})
#: keys that need no restart, and what helps instead
NO_RESTART = {
    "KV_CACHE_PRESSURE": "no restart: shed load at the router (fewer concurrent requests) or lower "
                         "--max-running-requests until token usage falls below 0.9",
    "CLOCK_SKEW": "no restart: put the host's clock in step (chrony / timedatectl set-ntp true)",
    "SAFEGUARDS_DISABLED": "nothing urgent: restore the PD timeouts at the next planned restart",
    "PD_CONFIG_MISMATCH": "restart the mismatched server with the setting its partner has, at a "
                          "quiet moment",
    "LOG_SIGNATURE": "no restart while the servers progress: read the log lines below",
    "KV_TRANSFER_FAILURES": "no restart while the servers progress: watch the failure counter",
    "PYSPY_UNAVAILABLE": "nothing on the cluster: fix py-spy access for the next capture",
}


def _server_names(capture: LoadedCapture | None, findings: Sequence[Finding]) -> dict[str, list[str]]:
    """Role -> "host (role:port)" of the servers the findings' evidence names."""
    hosts = {e.host for f in findings for e in f.evidence if isinstance(e, Evidence) and e.host}
    hosts |= {f.subject.split(" ", 1)[0] for f in findings if f.subject}
    out: dict[str, list[str]] = {}
    for s in capture.services() if capture is not None else ():
        if s.kind == "server" and s.host in hosts:
            out.setdefault(s.role, []).append(f"{s.host} ({s.role}:{s.port})")
    return out


def _pair(capture: LoadedCapture | None, findings: Sequence[Finding]) -> str:
    """The servers to restart together: those named, with their partner role's servers."""
    named = _server_names(capture, findings)
    if capture is not None and ("prefill" in named) != ("decode" in named):
        for s in capture.services():  # a frozen hop has two ends: restart both
            if s.kind == "server" and s.role in ("prefill", "decode") and s.role not in named:
                named.setdefault(f"partner {s.role}", []).append(f"{s.host} ({s.role}:{s.port})")
    order = {"prefill": 0, "partner prefill": 1, "decode": 2, "partner decode": 3}
    names = [n for role in sorted(named, key=lambda r: (order.get(r, 4), r)) for n in named[role]]
    if not names:
        return "the affected servers"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def mitigate_line(verdict: Verdict, findings: Sequence[Finding],
                  capture: LoadedCapture | None = None) -> str:
    """What restores service now (or that nothing needs doing)."""
    if verdict == "HEALTHY":
        return "nothing to do: the servers progress"
    setting = setting_findings(verdict, findings)
    if verdict == "UNKNOWN" or not setting:
        return ("capture again with 2 or more /metrics samples (--samples 3) before acting: "
                "this evidence cannot tell stuck from idle")
    top = setting[0]
    if top.key in ("ROUTER_NO_WORKERS", "ROUTER_BREAKER_OPEN", "DECODE_ONLY_DISPATCH"):
        return _router_line(top, findings, capture)
    if top.key == "XID_ERRORS":
        return f"drain {top.title.split(':', 1)[0]} and reset its GPUs (or reboot the node), then restart its servers"
    if top.key in RESTART_PAIR:
        together = " together" if " and " in (who := _pair(capture, setting)) else ""
        return f"restart {who}{together} (capture first: the evidence goes with the restart)"
    return NO_RESTART.get(top.key, f"no standard mitigation for {top.key}: follow the diagnose line")


_LEAD = linear.compile(r"for (prefill|decode|regular) worker (\S+)")


def _router_line(top: Finding, findings: Sequence[Finding], capture: LoadedCapture | None) -> str:
    """The worker to bring back: the one whose own errors opened the breakers, else the role
    the router lacks."""
    breaker = next((f for f in findings if f.key == "ROUTER_BREAKER_OPEN"), None)
    m = _LEAD.search(breaker.title) if breaker is not None else None
    if m is not None:
        role, url = m.group(1), m.group(2)
        hostport = url.split("://", 1)[-1].rstrip("/")
        who = next((f"{s.host} ({s.role}:{s.port})" for s in (capture.services() if capture else ())
                    if f"{s.address}:{s.port}" == hostport), f"the {role} server at {url}")
        return (f"restart {who}, the worker whose errors opened the router's breakers (capture "
                "first); the router sends to it again once it answers and its breaker closes")
    roles = [w for w in ("prefill", "decode") if w in top.title] or ["missing"]
    which = " and ".join(roles)
    return (f"give the router a working {which} worker: restart the failing {which} server "
            "(capture first) or register a healthy one (POST /workers)")


def diagnose_line(findings: Sequence[Finding], verdict: Verdict, diagnosis: object = None) -> str:
    """Where the cause is: the diagnosis's headline, else the top finding's first step."""
    headline = getattr(diagnosis, "headline", None)
    # an outage's cause is the router's (which worker failed), told by its finding below
    if isinstance(headline, str) and headline.strip() and verdict != "OUTAGE":
        return headline.strip()
    if verdict == "HEALTHY" or not findings:
        return "no finding to follow"
    pool = setting_findings(verdict, findings) or list(findings)
    # an outage's own finding says what is missing; the cause is in the one beside it
    pool = [f for f in pool if f.key != "ROUTER_NO_WORKERS"] or [
        f for f in findings if f.severity == "critical" and f.key != "ROUTER_NO_WORKERS"] or pool
    top = pool[0]
    step = top.next_step.strip()
    first = step.split(". ")[0].rstrip(".")
    return f"{top.key}: {first}" if first else f"{top.key}: {top.title}"
