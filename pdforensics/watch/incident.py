"""When to capture: a signature held for --for, once per incident, with a cooldown."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pdforensics.watch.signature import Suspicion


@dataclass(frozen=True)
class Decision:
    capture: bool
    state: str  # armed | open (captured; waits for the cluster to be healthy again)
    held: tuple[tuple[str, float], ...]  # (target, seconds held), longest first
    note: str = ""


@dataclass
class IncidentTracker:
    """Pure state machine fed one observation per poll (times are epoch seconds).

    A capture needs some server suspected continuously for ``hold_s``, the tracker armed,
    and ``cooldown_s`` since the last capture. After a capture the incident stays open until
    every server has been judged and unsuspected for ``rearm_s``.
    """

    hold_s: float
    cooldown_s: float
    rearm_s: float
    state: str = "armed"
    held_since: dict[str, float] = field(default_factory=dict)
    last_capture: float | None = None
    healthy_since: float | None = None

    def observe(self, now: float, suspicions: Mapping[str, Suspicion | None],
                all_judged: bool) -> Decision:
        for target, s in suspicions.items():
            if s is None:
                self.held_since.pop(target, None)
            else:
                self.held_since.setdefault(target, s.since)
        for gone in set(self.held_since) - set(suspicions):
            del self.held_since[gone]
        held = tuple(sorted(((t, now - since) for t, since in self.held_since.items()),
                            key=lambda x: -x[1]))
        healthy = all_judged and not self.held_since
        if self.state == "open":
            if not healthy:
                self.healthy_since = None
                return Decision(False, "open", held, "incident open: waiting for healthy")
            if self.healthy_since is None:
                self.healthy_since = now
            if now - self.healthy_since < self.rearm_s:
                return Decision(False, "open", held, "healthy again, re-arming")
            self.state, self.healthy_since = "armed", None
            return Decision(False, "armed", held, "incident closed: cluster healthy again")
        if not held or held[0][1] < self.hold_s:
            return Decision(False, "armed", held)
        if self.last_capture is not None and now - self.last_capture < self.cooldown_s:
            left = self.cooldown_s - (now - self.last_capture)
            return Decision(False, "armed", held, f"cooldown: {left:.0f}s left")
        self.state, self.last_capture = "open", now
        return Decision(True, "open", held, "signature held: capturing")
