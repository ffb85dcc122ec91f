"""The first of a list of causes that comes before a clue and shares its source, rid or room.

join._reports asks this of every weak failure report; comparing each report with every strong
cause was quadratic (a 100 MB log with thousands of each: 20 s). The answer here is the same,
found per group (a source, a rid, a room) by bisection over prefix minima of time and line.

"Before": by time when both have one and they differ; else by line within
one source; else (both timed, the same second) it counts as before.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from pdforensics.analysis.pdpath.model import Clue


def before(a: Clue, b: Clue) -> bool:
    """``a`` happened before ``b`` (see the module's docstring)."""
    if a.time is not None and b.time is not None and a.time != b.time:
        return a.time < b.time
    if a.source == b.source and a.line is not None and b.line is not None:
        return a.line < b.line
    return a.time is not None and b.time is not None and a.time == b.time


@dataclass
class _PrefixMin:
    """Positions in list order with the least value seen so far: the first position whose
    value is below ``x`` is a bisection away."""

    positions: list[int] = field(default_factory=list)
    neg_min: list[float] = field(default_factory=list)  # -(least so far): non-decreasing

    def add(self, pos: int, value: float) -> None:
        least = -self.neg_min[-1] if self.neg_min else value
        self.positions.append(pos)
        self.neg_min.append(-min(least, value))

    def first_below(self, x: float) -> int | None:
        k = bisect.bisect_right(self.neg_min, -x)
        return self.positions[k] if k < len(self.positions) else None


@dataclass
class _Group:
    timed: _PrefixMin = field(default_factory=_PrefixMin)  # by time
    by_time: dict[float, list[int]] = field(default_factory=dict)
    lines: _PrefixMin = field(default_factory=_PrefixMin)  # by line (a source's group)
    untimed_lines: _PrefixMin = field(default_factory=_PrefixMin)  # untimed ones, by line


class EarlierCauses:
    """Which of ``causes`` (in their order) comes first before a clue, in its source or
    sharing one of its rids or rooms, and not on its line."""

    def __init__(self, causes: list[Clue]) -> None:
        self._causes = causes
        self._groups: dict[tuple[str, object], _Group] = {}
        for pos, s in enumerate(causes):
            for key in self._keys(s):
                g = self._groups.setdefault(key, _Group())
                if s.time is not None:
                    g.timed.add(pos, s.time)
                    g.by_time.setdefault(s.time, []).append(pos)
                if key[0] == "source" and s.line is not None:
                    g.lines.add(pos, s.line)
                    if s.time is None:
                        g.untimed_lines.add(pos, s.line)

    @staticmethod
    def _keys(c: Clue) -> list[tuple[str, object]]:
        return ([("source", c.source)] + [("rid", r) for r in dict.fromkeys(c.rids)]
                + [("room", r) for r in dict.fromkeys(c.rooms)])

    def _related(self, s: Clue, c: Clue) -> bool:
        return (s.source, s.line) != (c.source, c.line) and before(s, c) and (
            s.source == c.source or bool(set(s.rids) & set(c.rids))
            or bool(set(s.rooms) & set(c.rooms)))

    def first_before(self, c: Clue) -> Clue | None:
        """The first cause (in list order) before ``c`` that shares its source, a rid or a
        room, and is not on ``c``'s line; None when there is none."""
        found: list[int] = []
        for key in self._keys(c):
            g = self._groups.get(key)
            if g is None:
                continue
            same_source = key[0] == "source"
            if c.time is None:  # only a line of its own source can be before it
                if same_source and c.line is not None:
                    found.append(_or_none(g.lines.first_below(c.line)))
                continue
            found.append(_or_none(g.timed.first_below(c.time)))
            found.append(next((p for p in g.by_time.get(c.time, ())
                               if self._related(self._causes[p], c)), _NONE))
            if same_source and c.line is not None:
                found.append(_or_none(g.untimed_lines.first_below(c.line)))
        pos = min(found, default=_NONE)
        if pos == _NONE:
            return None
        if self._related(self._causes[pos], c):
            return self._causes[pos]
        # the rare miss: a cause on c's own line with another time; look on, one by one
        return next((s for s in self._causes[pos:] if self._related(s, c)), None)


_NONE = 1 << 62


def _or_none(pos: int | None) -> int:
    return _NONE if pos is None else pos
