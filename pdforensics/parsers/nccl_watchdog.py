"""PyTorch ProcessGroupNCCL watchdog lines from every rank, and what they say together.

torch prints, per rank, ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N,
OpType=..., Timeout(ms)=...)`` and a status line ``... at work: N, last enqueued NCCL work: E,
last completed NCCL work: C`` (``-1``: nothing yet), the heartbeat monitor's ``watchdog got
stuck for S seconds``, and the lines that take the process down. Lines arrive under a
``[rankN]:`` prefix, a glog tag ``[E626 05:14:36.39 ProcessGroupNCCL.cpp:616]`` and a process
group prefix ``[PG ID 2 PG GUID 9 Rank 4]``; terminals wrap them, so a physical line that
starts no record continues the record before it.

`read_watchdog` finds the records; `cross_rank` reads them together, per process group: the
rank with the lowest last completed SeqNum is behind (when the others are ahead of it), a
rank that enqueued nothing (``-1``) or stopped enqueuing while the others wait in the next
collective never joined it, every other timed-out rank is a victim. When every rank shows
the same numbers nothing names a rank. Never raises on arbitrary text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.linescan import has_any, lines_with, marks, split_lines

#: the literal every record of interest holds (a cheap prefilter for callers)
#: (torch_npu prints the same records for Ascend's HCCL: "WorkHCCL(SeqNum=196, ...)", its
#: glog tag naming "compiler_depend.ts")
LITERALS = marks("ProcessGroupNCCL", "WorkNCCL", "NCCL work", "WorkHCCL", "HCCL operations",
                 "HCCL watchdog", "compiler_depend.ts:")

_RANK_TAG = linear.compile(r"\[rank(\d{1,7})\]:")
_GLOG = linear.compile(r"\[([EWIF])(?:(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d{1,9})?)? "
                   r"(?:ProcessGroupNCCL\.cpp|compiler_depend\.ts):\d{1,6}\]")
_PG = linear.compile(r"\[PG (?:ID (\d{1,6}) PG GUID (\d{1,6})(?:\(([^)\]]{0,80})\))?|(\d{1,6})"
                 r"(?: \(([^)\]]{0,80})\))?) Rank (\d{1,7})\]")
_RANK = linear.compile(r"\[Rank (\d{1,7})\]")
_WORK = linear.compile(r"Work[NH]CCL\(SeqNum=(\d{1,12}), OpType=(\w{1,60})(?:, NumelIn=(\d{1,24}), "
                   r"NumelOut=(\d{1,24}))?, Timeout\(ms\)=(\d{1,12})\)(?: ran for (\d{1,14}) "
                   r"milliseconds)?")
_STATUS = linear.compile(r"(?:at work|Timeout at NCCL work|work sequence id): (-?\d{1,12}),? "
                     r"(?:PG status: )?last enqueued (?:NCCL )?work: (-?\d{1,12}), "
                     r"last completed (?:NCCL )?work: (-?\d{1,12})")
_DUMP_SIGNAL = linear.compile(r"dump signal due to a collective timeout from {1,2}(this local rank|"
                          r"rank \d{1,7})[^.]{0,120}\. Last enqueued \w{1,10} work: (-?\d{1,12}), "
                          r"last completed \w{1,10} work: (-?\d{1,12})")
_STUCK = linear.compile(r"watchdog got stuck for (\d{1,9}) seconds")
# a physical line that opens a record of its own (never a continuation of the one before)
_OPENS = linear.compile(r"\[rank\d|\[[EWIF]\d{0,4}[ \d:.]{0,24}\w{1,40}\.(?:cpp|cc|h|py):\d|"
                    r"NCCL (?:INFO|WARN)|^\s*(?:frame #|Exception raised|Traceback|File \")|"
                    r"^\S{1,200}:\d{1,9}:\d{1,9} \[\d{1,4}\]|^\d{4}-\d\d-\d\d|^\[\d{4}-")

#: record kinds, in the order the reading cares for them
TIMEOUT = "timeout"  # the watchdog caught a collective past its timeout
STATUS = "status"  # last enqueued / last completed of the process group
HEARTBEAT = "heartbeat"  # the heartbeat monitor: the watchdog itself is stuck
TAKEDOWN = "takedown"  # the process is taken down / terminated after the timeout
DUMP = "dump"  # debug info / Flight Recorder dump being written


@dataclass(frozen=True)
class WatchdogRecord:
    """One torch ProcessGroupNCCL record (wrapped lines joined)."""

    lineno: int  # 1-based line of its first physical line
    text: str  # the record as found, wrapped lines joined
    kind: str  # TIMEOUT | STATUS | HEARTBEAT | TAKEDOWN | DUMP
    rank: str | None  # the global rank ([rankN]: prefix, else the [Rank N] of the message)
    pg: str | None  # "0 (default_pg)", "2/9", "1"; None when the line names no group
    seq: int | None = None  # the SeqNum / work the record is about
    op: str | None = None
    numel: int | None = None
    timeout_ms: int | None = None
    ran_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    stuck_s: int | None = None
    from_rank: str | None = None  # a dump signal: the rank whose timeout started it
    when: float | None = None  # seconds into the year (glog has no year): ordering only
    level: str = "E"


@dataclass(frozen=True)
class RankState:
    """What one rank of one process group showed."""

    rank: str
    pg: str | None
    seq: int | None  # the work it timed out in
    op: str | None
    last_enqueued: int | None
    last_completed: int | None
    lines: tuple[int, ...]


@dataclass(frozen=True)
class CrossRank:
    """Every rank's records read together, per process group."""

    states: tuple[RankState, ...]
    behind: tuple[RankState, ...]  # lowest last completed while the others are ahead
    never_joined: tuple[RankState, ...]  # nothing enqueued, or idle while others wait
    waiting_in: int | None  # the SeqNum the others wait in (never_joined did not enqueue it)
    victims: tuple[str, ...]  # ranks that timed out waiting (for the ranks above, when named)
    mismatched: tuple[tuple[int, tuple[tuple[str, str], ...]], ...]  # seq -> (rank, op) that differ
    stuck_watchdogs: tuple[WatchdogRecord, ...]  # heartbeat records no earlier timeout explains
    explained_stalls: tuple[WatchdogRecord, ...]  # heartbeat records after a timeout (consequences)

    @property
    def suspects(self) -> tuple[str, ...]:
        named = [s.rank for s in self.behind + self.never_joined]
        named += [r.rank for r in self.stuck_watchdogs if r.rank is not None]
        return tuple(dict.fromkeys(named))


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, record) with terminal-wrapped continuations joined to their record: the
    plain walk over every line, the reference `_records_with_literals` is held to (tests)."""
    cur: list[str] = []
    start = 0
    joined = 0
    for no, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        cont = (cur and joined < 40 and line.strip() and _OPENS.search(line) is None
                and "ProcessGroupNCCL" in cur[0])
        if cont:
            cur.append(line)
            joined += 1
            continue
        if cur:
            yield start, "".join(cur)
        cur, start, joined = [line], no, 0
    if cur:
        yield start, "".join(cur)


def _records_with_literals(text: str) -> Iterator[tuple[int, str]]:
    """The `_logical_lines` records that hold one of LITERALS (no other one is a record):
    only a record opened by a line with "ProcessGroupNCCL" has continuations, so each such
    record opens on a line holding a literal, found by one scan of the text."""
    every: Sequence[str] | None = None
    consumed = 0  # lines up to this number belong to a record already given
    for no, raw in lines_with(text, LITERALS):
        if no <= consumed:
            continue
        cur = [raw.rstrip("\r")]
        if "ProcessGroupNCCL" in cur[0]:
            every = split_lines(text) if every is None else every
            j = no  # the index of the line after this one
            while len(cur) - 1 < 40 and j < len(every):
                nxt = every[j].rstrip("\r")
                if not nxt.strip() or _OPENS.search(nxt) is not None:
                    break
                cur.append(nxt)
                j += 1
            consumed = j
        yield no, "".join(cur)


def _when(m: linear.Match[str]) -> float | None:
    if m.group(2) is None:
        return None
    mon, day, h, mi, s = (int(m.group(i)) for i in range(2, 7))
    if not (1 <= mon <= 12 and 1 <= day <= 31 and h < 24 and mi < 60 and s <= 60):
        return None
    return float(((mon * 31 + day) * 24 + h) * 3600 + mi * 60 + s)


def _pg(m: linear.Match[str] | None) -> str | None:
    if m is None:
        return None
    if m.group(1) is not None:
        name = f" ({m.group(3)})" if m.group(3) else ""
        return f"{m.group(1)}/{m.group(2)}{name}"
    return m.group(4) + (f" ({m.group(5)})" if m.group(5) else "")


def _kind(rec: str) -> str | None:
    if _WORK.search(rec) or "Watchdog caught collective operation timeout" in rec:
        return TIMEOUT
    if _STATUS.search(rec) or _DUMP_SIGNAL.search(rec):
        return STATUS
    if _STUCK.search(rec):
        return HEARTBEAT
    if ("taking the entire process down" in rec or "Terminating the process" in rec
            or "watchdog thread terminated with exception" in rec
            or "CCL operations have failed or timed out" in rec):  # (NCCL's, HCCL's)
        return TAKEDOWN
    if "dump debug info" in rec or "signal dumping" in rec:
        return DUMP
    return None


def _record(no: int, rec: str) -> WatchdogRecord | None:
    if not any(lit in rec for lit in LITERALS):
        return None
    kind = _kind(rec)
    if kind is None:
        return None
    tag, glog, pgm = _RANK_TAG.search(rec), _GLOG.search(rec), _PG.search(rec)
    rm = _RANK.search(rec)
    rank = tag.group(1) if tag else (pgm.group(6) if pgm else (rm.group(1) if rm else None))
    work, status, sig = _WORK.search(rec), _STATUS.search(rec), _DUMP_SIGNAL.search(rec)
    stuck = _STUCK.search(rec)
    seq = int(work.group(1)) if work else (int(status.group(1)) if status else None)
    enq = status.group(2) if status else (sig.group(2) if sig else None)
    done = status.group(3) if status else (sig.group(3) if sig else None)
    frm = sig.group(1) if sig else None
    return WatchdogRecord(
        lineno=no, text=rec.strip(), kind=kind, rank=rank, pg=_pg(pgm), seq=seq,
        op=work.group(2) if work else None,
        numel=int(work.group(3)) if work and work.group(3) else None,
        timeout_ms=int(work.group(5)) if work else None,
        ran_ms=int(work.group(6)) if work and work.group(6) else None,
        last_enqueued=int(enq) if enq is not None else None,
        last_completed=int(done) if done is not None else None,
        stuck_s=int(stuck.group(1)) if stuck else None,
        from_rank=None if frm is None or frm == "this local rank" else frm.split()[-1],
        when=_when(glog) if glog else None, level=glog.group(1) if glog else "E")


def read_watchdog(text: str) -> tuple[WatchdogRecord, ...]:
    """Every ProcessGroupNCCL watchdog record of ``text``, in file order."""
    if not has_any(text, LITERALS):
        return ()
    out = []
    for no, rec in _records_with_literals(text):
        r = _record(no, rec)
        if r is not None:
            out.append(r)
    return tuple(out)


def _states(records: Sequence[WatchdogRecord]) -> list[RankState]:
    """One state per (rank, process group): the status numbers, and the op it timed out in."""
    by: dict[tuple[str, str | None], dict[str, object]] = {}
    ops: dict[tuple[str, int], str] = {}
    for r in records:
        if r.rank is None:
            continue
        if r.kind == TIMEOUT and r.seq is not None and r.op:
            ops[(r.rank, r.seq)] = r.op
        if r.last_completed is None:
            continue
        st = by.setdefault((r.rank, r.pg), {"lines": []})
        st.update(seq=r.seq, enq=r.last_enqueued, done=r.last_completed)
        lines = st["lines"]
        assert isinstance(lines, list)
        lines.append(r.lineno)
    out = []
    for (rank, pg), st in by.items():
        seq = st.get("seq")
        seq_i = seq if isinstance(seq, int) else None
        enq, done, lines = st.get("enq"), st.get("done"), st["lines"]
        assert isinstance(lines, list)
        out.append(RankState(rank, pg, seq_i, ops.get((rank, seq_i)) if seq_i is not None else None,
                             enq if isinstance(enq, int) else None,
                             done if isinstance(done, int) else None, tuple(lines)))
    return out


def _group_reading(group: list[RankState]) -> tuple[list[RankState], list[RankState], int | None]:
    """(behind, never joined, the seq the others wait in) within one process group."""
    if len(group) < 2:
        return [], [], None
    never = [s for s in group if s.last_enqueued == -1]
    # idle (completed all it enqueued) while another rank has work outstanding past it
    waiting = [s for s in group if s.last_enqueued is not None and s.last_completed is not None
               and s.last_enqueued > s.last_completed]
    if waiting:
        nxt = min(s.last_completed + 1 for s in waiting if s.last_completed is not None)
        never += [s for s in group if s not in never and s.last_enqueued is not None
                  and s.last_enqueued == s.last_completed and s.last_enqueued < nxt]
    else:
        nxt = None
    done = [s.last_completed for s in group if s.last_completed is not None and s not in never]
    behind: list[RankState] = []
    if len(set(done)) > 1:
        low = min(done)
        behind = [s for s in group if s.last_completed == low and s not in never]
        if len(behind) * 2 >= len(group):  # the lowest is no minority: nobody stands out
            behind = []
    return behind, never, nxt if never else None


def _mismatches(records: Sequence[WatchdogRecord]) -> list[tuple[int, tuple[tuple[str, str], ...]]]:
    """SeqNums at which ranks time out in different collectives; ranks whose group is not
    named count as the one named group at that SeqNum (never across two named groups)."""
    pg_of: dict[str, str | None] = {}
    for r in records:
        if r.rank is not None and r.pg is not None:
            pg_of.setdefault(r.rank, r.pg)
    by: dict[int, dict[str, tuple[str | None, str]]] = {}
    for r in records:
        if r.kind == TIMEOUT and r.rank is not None and r.seq is not None and r.op:
            by.setdefault(r.seq, {})[r.rank] = (pg_of.get(r.rank), r.op)
    out = []
    for seq, ranks in by.items():
        if len({pg for pg, _op in ranks.values() if pg is not None}) > 1:
            continue  # two named groups: their SeqNums count different things
        if len({op for _pg, op in ranks.values()}) > 1:
            out.append((seq, tuple(sorted((rk, op) for rk, (_pg, op) in ranks.items()))))
    return out


def _stalls(records: Sequence[WatchdogRecord]) -> tuple[list[WatchdogRecord], list[WatchdogRecord]]:
    """Heartbeat records split: unexplained (a cause) or after a collective timeout (its
    consequence: the abort or the dump hung)."""
    timeouts = [r.when for r in records if r.kind == TIMEOUT and r.when is not None]
    untimed_timeout = any(r.kind == TIMEOUT and r.when is None for r in records)
    cause, after = [], []
    for r in records:
        if r.kind != HEARTBEAT:
            continue
        began = r.when - r.stuck_s if r.when is not None and r.stuck_s is not None else None
        if untimed_timeout or (began is not None and any(t <= began + 1 for t in timeouts)) or (
                began is None and timeouts):
            after.append(r)
        else:
            cause.append(r)
    return cause, after


def cross_rank(records: Sequence[WatchdogRecord]) -> CrossRank:
    """Read every rank's records together (see the module docstring)."""
    states = _states(records)
    groups: dict[str | None, list[RankState]] = {}
    for s in states:
        groups.setdefault(s.pg, []).append(s)
    behind: list[RankState] = []
    never: list[RankState] = []
    waiting_in = None
    for pg, group in groups.items():
        if pg is None:  # a group that is never named cannot be compared across ranks
            continue
        b, n, nxt = _group_reading(group)
        behind += b
        never += n
        waiting_in = waiting_in if waiting_in is not None else nxt
    named = {s.rank for s in behind + never}
    victims = [r.rank for r in records if r.kind in (TIMEOUT, STATUS) and r.rank is not None
               and r.rank not in named]
    cause, after = _stalls(records)
    return CrossRank(tuple(states), tuple(behind), tuple(never), waiting_in,
                     tuple(dict.fromkeys(victims)),
                     tuple(_mismatches(records)), tuple(cause), tuple(after))
