"""A client's Go goroutine dump (--client-dump) next to the server's in-flight counts."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.findings import Evidence, Finding, Need, SkipRule, rule
from pdforensics.analysis.metrics_view import fmt, short, work_in_flight
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.frames import ThreadStack

_HTTP_WAIT = linear.compile(r"net/http\.\(\*persistConn\)\.roundTrip|net/http\.\(\*Transport\)\."
                        r"roundTrip|net/http\.\(\*Client\)\.(?:do|Do)|net/http\.send$")


def http_blocked(g: ThreadStack) -> bool:
    return any(_HTTP_WAIT.search(f.function) for f in g.frames)


@rule("CLIENT_BLOCKED", needs=(Need.CLIENT_DUMPS,), rank=85)
def client_blocked(ctx: Context) -> Iterator[Finding]:
    """Client goroutines blocked in net/http round trips, with the servers' in-flight counts."""
    usable = [d for d in ctx.client_dumps if d.error is None]
    if not usable:
        raise SkipRule("; ".join(f"{d.path}: {d.error}" for d in ctx.client_dumps))
    inflight: list[Evidence | str] = []
    for svc in ctx.servers():
        for what, t in work_in_flight(svc):
            inflight.append(Evidence(svc.host, f"{svc.role}:{svc.port} /metrics",
                                     f"{what}: {short(t.name)} {fmt(t.last)}"))
    for d in usable:
        blocked = [g for g in d.goroutines if http_blocked(g)]
        total = sum(g.count for g in d.goroutines)
        n = sum(g.count for g in blocked)
        waits = [g.wait_minutes for g in blocked if g.wait_minutes is not None]
        if not n:
            yield Finding(
                "CLIENT_BLOCKED", "info",
                f"client dump {d.path}: no goroutine waits in an HTTP round trip "
                f"({total} goroutines)", tuple(inflight),
                "The client is not waiting on the servers.", section="client")
            continue
        span = ""
        if waits:
            lo, hi = min(waits), max(waits)
            span = f" for {lo}-{hi} minutes" if lo != hi else f" for {lo} minutes"
        ev: list[Evidence | str] = [Evidence("client", d.path, f"{n} of {total} goroutines in "
                                             f"net/http roundTrip{span}")]
        ev.extend(inflight or ["no server reports requests in flight"])
        yield Finding(
            "CLIENT_BLOCKED", "warning" if waits and max(waits) >= 1 else "info",
            f"{n} goroutines blocked in net/http roundTrip{span}",
            tuple(ev),
            "Compare with the servers' in-flight counts: requests the client waits for but "
            "no server holds were lost between router and servers; set client timeouts so "
            "a wedge does not pile up goroutines.",
            section="client")
