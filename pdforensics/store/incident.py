"""Which snapshots frame the latest incident: the last HEALTHY one, the first not-healthy one
after it, and the reference the changes are counted from. Pure: verdicts only, no bundles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdforensics.store.index import Snapshot


@dataclass(frozen=True)
class Incident:
    """`since` is where the suspects' changes are counted from: the explicit baseline when
    one is set before the incident, else the start of the healthy run that ends at
    `last_healthy`. `recovered` is the first HEALTHY snapshot after the incident, if any."""

    since: Snapshot | None
    last_healthy: Snapshot | None
    first_unhealthy: Snapshot | None
    recovered: Snapshot | None
    window: tuple[Snapshot, ...]  # since .. first_unhealthy, oldest first, every snapshot

    @property
    def names(self) -> set[str]:
        return {s.name for s in (self.since, self.last_healthy, self.first_unhealthy) if s}


def find_incident(snaps: Sequence[Snapshot], baseline: Snapshot | None = None) -> Incident:
    """The most recent HEALTHY -> not-healthy transition in `snaps` (oldest first).

    Snapshots without a verdict are skipped when judging, kept in the window. An explicit
    baseline (set by hand, HEALTHY or not) is where changes are counted from when it comes
    before the incident; when no HEALTHY -> not-healthy transition follows it (the cluster was
    never judged HEALTHY, or the baseline was set after the last HEALTHY one), the incident is
    the first not-healthy snapshot after the baseline.
    """
    judged = [i for i, s in enumerate(snaps) if s.verdict is not None]
    pos = next((i for i, s in enumerate(snaps) if baseline is not None and s.name == baseline.name),
               None)
    last_h = first_u = None
    for a, b in zip(judged, judged[1:], strict=False):
        if snaps[a].healthy and not snaps[b].healthy:
            last_h, first_u = a, b
    if pos is not None and (first_u is None or (last_h is not None and pos > last_h)):
        after = next((i for i in judged if i > pos and not snaps[i].healthy), None)
        if after is not None:
            healthy = [i for i in judged if pos <= i < after and snaps[i].healthy]
            recovered = next((snaps[i] for i in judged if i > after and snaps[i].healthy), None)
            return Incident(since=snaps[pos], last_healthy=snaps[healthy[-1]] if healthy else None,
                            first_unhealthy=snaps[after], recovered=recovered,
                            window=tuple(snaps[pos:after + 1]))
    if first_u is None:
        healthy = [i for i in judged if snaps[i].healthy]
        unhealthy = [i for i in judged if not snaps[i].healthy]
        if not healthy and unhealthy:  # never healthy: nothing to compare with
            return Incident(None, None, snaps[unhealthy[0]], None, ())
        last = snaps[healthy[-1]] if healthy else None
        return Incident(None, last, None, None, ())
    assert last_h is not None
    start = last_h
    for i in reversed([j for j in judged if j <= last_h]):
        if not snaps[i].healthy:
            break
        start = i
    if pos is not None and pos <= last_h:
        start = pos
    recovered = next((snaps[i] for i in judged if i > first_u and snaps[i].healthy), None)
    return Incident(since=snaps[start], last_healthy=snaps[last_h], first_unhealthy=snaps[first_u],
                    recovered=recovered, window=tuple(snaps[start:first_u + 1]))
