"""EarlierCauses finds, by bisection, the cause a pairwise scan finds: property test on small
worlds of clues with shared and missing times, lines, rids and rooms (ties are the hard part)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.analysis.pdpath.earlier import EarlierCauses, before
from pdforensics.analysis.pdpath.model import Clue

_clue = st.builds(
    lambda source, line, time, rids, rooms: Clue(
        key="K", label="cause", text="t", source=source, line=line, time=time,
        rids=tuple(rids), rooms=tuple(rooms)),
    st.sampled_from(["a.log", "b.log", "c.log"]),
    st.one_of(st.none(), st.integers(0, 12)),
    st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.0, 3.5])),
    st.lists(st.sampled_from(["r1", "r2", "r3"]), max_size=2),
    st.lists(st.sampled_from([7, 8]), max_size=2),
)


def _pairwise(causes: list[Clue], c: Clue) -> Clue | None:
    return next((s for s in causes if before(s, c) and (s.source, s.line) != (c.source, c.line)
                 and (s.source == c.source or set(s.rids) & set(c.rids)
                      or set(s.rooms) & set(c.rooms))), None)


@settings(max_examples=400, deadline=None)
@given(st.lists(_clue, max_size=14), st.lists(_clue, min_size=1, max_size=6))
def test_same_answer_as_the_pairwise_scan(causes: list[Clue], asked: list[Clue]) -> None:
    index = EarlierCauses(causes)
    for c in asked + causes:
        assert index.first_before(c) is _pairwise(causes, c)


def test_the_first_in_list_order_not_the_earliest() -> None:
    """Two causes before the report: the one listed first is the answer even when the other
    is earlier in time (what join._reports has always quoted)."""
    late = Clue(key="A", label="cause", text="a", source="x.log", line=5, time=10.0)
    early = Clue(key="B", label="cause", text="b", source="x.log", line=2, time=1.0)
    report = Clue(key="R", label="cause", text="r", source="x.log", line=9, time=20.0)
    assert EarlierCauses([late, early]).first_before(report) is late
    assert EarlierCauses([]).first_before(report) is None


def test_a_cause_on_the_reports_own_line_is_skipped() -> None:
    same = Clue(key="A", label="cause", text="a", source="x.log", line=9, time=5.0)
    other = Clue(key="B", label="cause", text="b", source="x.log", line=3, time=6.0)
    report = Clue(key="R", label="cause", text="r", source="x.log", line=9, time=7.0)
    assert EarlierCauses([same, other]).first_before(report) is other
