"""Active probes: /health_generate, one tiny generation pushed through the scheduler; /ready,
SGLang's own word on whether a server takes new requests."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.analysis.rules.progress import metrics_evidence
from pdforensics.collectors.feeds import Fetch
from pdforensics.views.loaded import ServiceView


def probe_failed(f: Fetch) -> bool:
    """The probe hung (timed out) or SGLang gave up on it (a 5xx after its own timeout)."""
    if f.timed_out or "timed out" in (f.error or "").lower():
        return True
    return f.answered and f.status is not None and f.status >= 500


def _probe_text(f: Fetch) -> str:
    if f.answered:
        return f"status {f.status} after {f.duration_s:.1f} s (SGLang's health check failed)"
    return f"no answer after {f.duration_s:.1f} s (timed out)"


def _evidence(ctx: Context, svc: ServiceView, probe: Fetch, health: Fetch) -> list[Evidence | str]:
    where = f"{svc.role}:{svc.port}"
    ev: list[Evidence | str] = [
        Evidence(svc.host, f"{where} /health_generate", _probe_text(probe),
                 ctx.path_of(svc.host, probe.key)),
        Evidence(svc.host, f"{where} /health", f"status {health.status} after "
                 f"{health.duration_s:.1f} s", ctx.path_of(svc.host, health.key)),
    ]
    p = ctx.progress(svc)
    if p.judged:
        ev.append(metrics_evidence(ctx, svc, ("progress frozen: " if p.frozen
                                              else "progress moving: ") + p.text()))
    return ev


@rule("SCHEDULER_PROBE_HANG", needs=(Need.PROBES,), rank=42)
def scheduler_probe_hang(ctx: Context) -> Iterator[Finding]:
    """/health_generate hung while /health answered: the scheduler does not finish a request."""
    for svc in ctx.servers():
        probe, health = svc.fetches.get("health_generate"), svc.fetches.get("health")
        if probe is None or health is None or not probe_failed(probe):
            continue
        if not (health.answered and health.status == 200):
            continue  # the whole server is down or hung: other findings say so
        p = ctx.progress(svc)
        frozen = p.judged and p.frozen
        yield Finding(
            "SCHEDULER_PROBE_HANG", "critical",
            f"{svc.label}: /health_generate hangs while /health answers"
            + (" and the counters are frozen" if frozen else ""),
            tuple(_evidence(ctx, svc, probe, health)),
            "A 1-token request did not come back through the scheduler: take py-spy dumps of "
            "every scheduler rank and of the detokenizer, and read the server log for "
            "'Health check failed'. A liveness probe on /health alone does not see this: "
            "point it at /health_generate.",
            section="scheduler", wedge=frozen, subject=svc.label,
        )


@rule("SERVER_NOT_READY", needs=(Need.SERVERS,), rank=41)
def server_not_ready(ctx: Context) -> Iterator[Finding]:
    """/ready answers 503: SGLang itself keeps new requests from the server."""
    for svc in ctx.servers():
        ready = svc.fetches.get("ready")
        if ready is None or not ready.answered or ready.status != 503:
            continue
        where = f"{svc.role}:{svc.port}"
        ev: list[Evidence | str] = [Evidence(svc.host, f"{where} /ready", f"status 503 after {ready.duration_s:.1f} s",
                                             ctx.path_of(svc.host, ready.key))]
        for name in ("health", "health_generate"):
            f = svc.fetches.get(name)
            if f is not None:
                said = f"status {f.status}" if f.answered else "no answer (timed out)"
                ev.append(Evidence(svc.host, f"{where} /{name}", f"{said} after {f.duration_s:.1f} s",
                                   ctx.path_of(svc.host, f.key)))
        yield Finding(
            "SERVER_NOT_READY", "critical",
            f"{svc.label}: /ready answers 503: the server takes no new requests", tuple(ev),
            "SGLang answers /ready 503 while generation is paused (POST /pause_generation, as RL "
            "weight updates do; POST /continue_generation resumes it), after a failed health check "
            "marked the server unhealthy ('Health check failed' in its log), or while it starts or "
            "shuts down. Requests a router still sends it wait: find who paused it in the logs.",
            section="scheduler", subject=svc.label,
        )
