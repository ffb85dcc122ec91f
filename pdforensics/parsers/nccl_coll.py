"""NCCL's collective trace (``NCCL_DEBUG=INFO``, subsystem COLL): one line per collective a
rank enqueues, ``<Coll>: opCount N sendbuff P recvbuff P count C datatype D op O root R comm
P [nranks=N] stream P``. Every rank of a communicator must post the same collective with the
same count, datatype, op and root at each opCount; a rank that posts different arguments
makes the collective wait forever (NCCL checks none of them). Here: the opCounts at which the
ranks of one group disagree, and who the odd ones out are: the whole group seen, the
minority; a part of it, only a clear one (at most a third of the ranks seen).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.linescan import first_lines_with, has_any, marks
from pdforensics.parsers.textcache import by_text

_COLL = linear.compile(
    r"(?:^|[\s:\]])([\w.-]{1,200}):(\d{1,10}):\d{1,10} \[(\d{1,4})\] NCCL INFO ([A-Za-z]{2,30}): "
    r"opCount ([0-9a-fA-Fx]{1,18}) sendbuff \S{1,20} recvbuff \S{1,20} count (\d{1,20}) "
    r"datatype (\d{1,3}) op (\d{1,3}) root (-?\d{1,7}) comm \S{1,20} \[nranks=(\d{1,6})\]")
_MARKS = marks(" opCount ")
#: the first lines read: a mismatch shows at the first collective that differs
_MAX_LINES = 20000


@dataclass(frozen=True)
class CollMismatch:
    """One opCount at which the ranks of a group posted different collectives."""

    op_count: str
    nranks: int
    odd: tuple[tuple[int, str], ...]  # (line number, line) of the ranks in the minority
    majority: str  # what the others posted: "Broadcast count 53 datatype 4 op 0 root 0"
    writer: str  # the first odd line's writer as printed: "host:pid:tid [dev] NCCL INFO Coll"


@by_text
def read_coll_mismatches(text: str) -> tuple[CollMismatch, ...]:
    """The opCounts at which one group's ranks disagree (each process once, the whole group
    seen), in file order; at most a few."""
    if not has_any(text, _MARKS):
        return ()
    groups: dict[tuple[str, int], dict[tuple[str, str], tuple[int, str, str, str]]] = {}
    for no, line in first_lines_with(text, (" opCount ",), _MAX_LINES):
        m = _COLL.search(line)
        if m is None:
            continue
        host, pid, _dev, coll, op, count, dtype, red, root, nranks = m.groups()
        posted = f"{coll} count {count} datatype {dtype} op {red} root {root}"
        writer = line[m.start(1):m.end(4)]
        per = groups.setdefault((op, int(nranks)), {})
        if (host, pid) in per:  # a process in two groups of one size: not decidable here
            per[(host, pid)] = (-1, "", "", "")
            continue
        per[(host, pid)] = (no, line.strip(), posted, writer)
    out: list[CollMismatch] = []
    for (op, nranks), per in groups.items():
        rows = list(per.values())
        if not 3 <= len(rows) <= nranks or any(r[0] < 0 for r in rows):
            continue  # (more processes than the group has: several groups of one size)
        votes = Counter(r[2] for r in rows)
        if len(votes) < 2:
            continue
        (major, n_major), *rest = votes.most_common()
        n_odd = len(rows) - n_major
        if n_odd >= n_major or (len(rows) < nranks and n_odd > len(rows) // 3):
            # no clear majority (a part of the group seen: two groups of one size may post
            # different things at one opCount) -- which side is odd is not decidable
            continue
        odd = sorted((r for r in rows if r[2] != major), key=lambda r: r[0])
        out.append(CollMismatch(op, nranks, tuple((r[0], r[1]) for r in odd), major,
                                odd[0][3]))
        if len(out) >= 4:
            break
    return tuple(sorted(out, key=lambda x: x.odd[0][0]))
