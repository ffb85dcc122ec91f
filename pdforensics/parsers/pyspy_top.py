"""``py-spy top`` screens (as captured from a terminal): where a process spends its CPU.

A screen reads ``Collecting samples from 'CMD' (python vX.Y.Z)``, ``Total Samples N``,
``GIL: a%, Active: b%, Threads: n``, then a table ``%Own %Total OwnTime TotalTime Function
(filename)``. ``Active`` is the share of samples in which some thread ran (it exceeds 100 %
with many threads); ``%Own`` is the time a function itself was on the stack top. Every thread
idle (Active 0 %) in a server that should be working is a process waiting on something; one
function holding most of ``%Own`` is where the CPU goes. py-spy's own warning ``behind in
sampling`` means the numbers are approximate. Never raises on arbitrary text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear

_HEAD = linear.compile(r"Collecting samples from '(.{0,1000})' \(python v(\S{1,20})\)")
_TOTAL = linear.compile(r"^\s{0,8}Total Samples (\d{1,15})")
_STATS = linear.compile(r"GIL: ([\d.]{1,10})%, Active: ([\d.]{1,12})%, Threads: (\d{1,7})")
_ROW = linear.compile(r"^\s{0,12}([\d.]{1,10})%\s{1,12}([\d.]{1,12})%\s{1,12}([\d.]{1,12})s\s{1,12}"
                  r"([\d.]{1,12})s\s{1,12}(\S.*)$")
_BEHIND = linear.compile(r"([\d.]{1,12})s behind in sampling")


@dataclass(frozen=True)
class TopRow:
    own_pct: float
    total_pct: float
    own_s: float
    total_s: float
    function: str  # "forward_batch (busy.py)"


@dataclass(frozen=True)
class PyspyTop:
    command: str
    python: str
    samples: int | None
    gil_pct: float | None
    active_pct: float | None
    threads: int | None
    rows: tuple[TopRow, ...]
    behind_s: float | None  # py-spy could not keep up: the percentages are approximate

    @property
    def idle(self) -> bool:
        """No thread ran during the samples (Active 0 %)."""
        return self.active_pct is not None and self.active_pct == 0.0

    @property
    def hottest(self) -> TopRow | None:
        busy = [r for r in self.rows if r.own_pct > 0]
        return max(busy, key=lambda r: r.own_pct) if busy else None


def looks_like_pyspy_top(text: str) -> bool:
    return "Collecting samples from '" in text[:20000] and "%Own" in text[:40000]


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def parse_pyspy_top(text: str) -> PyspyTop | None:
    """The last screen of ``text`` (a capture may hold several refreshes); None without one."""
    starts = [m.start() for m in _HEAD.finditer(text)]
    if not starts:
        return None
    screen = text[starts[-1]:]
    head = _HEAD.search(screen)
    assert head is not None
    total = next((int(m.group(1)) for ln in screen.split("\n") if (m := _TOTAL.match(ln))), None)
    stats = _STATS.search(screen)
    rows: list[TopRow] = []
    for ln in screen.split("\n"):
        m = _ROW.match(ln.rstrip("\r"))
        if m is None:
            continue
        vals = [_float(m.group(i)) for i in range(1, 5)]
        if any(v is None for v in vals):
            continue
        own, tot, own_s, tot_s = (v if v is not None else 0.0 for v in vals)
        rows.append(TopRow(own, tot, own_s, tot_s, m.group(5).strip()[:500]))
    behind = _BEHIND.search(text[:starts[-1] + 200])
    return PyspyTop(head.group(1)[:500], head.group(2), total,
                    _float(stats.group(1)) if stats else None,
                    _float(stats.group(2)) if stats else None,
                    int(stats.group(3)) if stats else None, tuple(rows),
                    _float(behind.group(1)) if behind else None)
