"""IncidentTracker: hold for --for, one capture per incident, cooldown, re-arm when healthy."""

from __future__ import annotations

from pdforensics.watch.incident import IncidentTracker
from pdforensics.watch.signature import Suspicion

T = "decode-0 decode:30001"


def sus(since: float) -> Suspicion:
    return Suspicion(T, ("DECODE_TRANSFER_STUCK",), ("stuck",), since)


def run(tr: IncidentTracker, times: range, suspected: bool, judged: bool = True) -> list[float]:
    """Feed one observation per second; the times at which a capture was decided."""
    out = []
    for t in times:
        d = tr.observe(float(t), {T: sus(float(t) - 10) if suspected else None}, judged)
        if d.capture:
            out.append(float(t))
    return out


def test_capture_once_when_held_for_hold_s() -> None:
    tr = IncidentTracker(hold_s=60, cooldown_s=0, rearm_s=60)
    # the first window showing it began at t-10, so 60 s are held at t = 50
    assert run(tr, range(0, 40), suspected=True) == []
    assert run(tr, range(40, 300), suspected=True) == [50.0]
    assert tr.state == "open"


def test_a_break_in_the_signature_restarts_the_hold() -> None:
    tr = IncidentTracker(hold_s=60, cooldown_s=0, rearm_s=60)
    assert run(tr, range(0, 45), suspected=True) == []
    assert run(tr, range(45, 46), suspected=False) == []
    # held again from 46 - 10 = 36: capture at 96, not at 50
    assert run(tr, range(46, 200), suspected=True) == [96.0]


def test_next_capture_needs_healthy_again_for_rearm_s() -> None:
    tr = IncidentTracker(hold_s=10, cooldown_s=0, rearm_s=30)
    assert run(tr, range(0, 100), suspected=True) == [0.0]
    assert run(tr, range(100, 120), suspected=False) == []  # healthy 20 s < rearm 30 s
    assert tr.state == "open"
    assert run(tr, range(120, 125), suspected=True) == []  # still the same incident
    assert run(tr, range(125, 160), suspected=False) == []
    assert tr.state == "armed"
    assert run(tr, range(160, 170), suspected=True) == [160.0]


def test_unjudged_servers_do_not_count_as_healthy() -> None:
    tr = IncidentTracker(hold_s=10, cooldown_s=0, rearm_s=5)
    assert run(tr, range(0, 10), suspected=True) == [0.0]
    # a server that stopped answering is not "healthy again"
    assert run(tr, range(10, 100), suspected=False, judged=False) == []
    assert tr.state == "open"


def test_cooldown_delays_a_new_incident() -> None:
    tr = IncidentTracker(hold_s=10, cooldown_s=300, rearm_s=5)
    assert run(tr, range(0, 5), suspected=True) == [0.0]
    assert run(tr, range(5, 20), suspected=False) == []
    assert tr.state == "armed"
    d = tr.observe(100.0, {T: sus(80.0)}, True)
    assert not d.capture and "cooldown" in d.note
    assert run(tr, range(101, 400), suspected=True) == [300.0]


def test_held_lists_the_longest_first() -> None:
    tr = IncidentTracker(hold_s=60, cooldown_s=0, rearm_s=60)
    d = tr.observe(100.0, {T: sus(90.0), "prefill-0 prefill:30000": Suspicion("p", ("X",), ("x",), 70.0)},
                   True)
    assert [k for k, _s in d.held] == ["prefill-0 prefill:30000", T]
    assert d.held[0][1] == 30.0
