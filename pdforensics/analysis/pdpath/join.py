"""Join clues across lines, files and hosts: which causes are really consequences.

A cause is demoted to a consequence (with ``why`` saying what it follows from) when:
- its own line also carries a consequence the source defines ("from another rank": the rank
  recorded no failure of its own; "Aborted by AbortReq.": the abort path);
- it is a scheduler's "hit an exception" envelope and an exception line of that traceback
  (just after it, or the tail printed just before it) says what was raised, or, for a
  traceback cut before its exception line, its innermost frame says where;
- it is a symptom of a server whose own scheduler process is stopped, dead or missing
  (its frozen queues and counters, its hung endpoints);
- it is a generic error line (a log level, read_errors.py) printed right after a failure a
  reader knows, in the same burst;
- it is SGLang's generic announcement of a failure it records just after (ANNOUNCES);
- it is a weak failure report (strength 1: "Decode handshake failed", "Decode transfer
  failed", ...) and a stronger cause comes before it in the same source, or shares its rid or
  bootstrap room anywhere.
- it is an abort (SIGABRT, glibc's heap check) just after an error of its source (aborts.py).
An exception line inside a scheduler's envelope takes the envelope's rank.
One step promotes instead: of ranks caught waiting in two different collectives, the one rank
alone in its call is the odd one out (_diverged).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import replace

from pdforensics import linear
from pdforensics.analysis.pdpath.aborts import self_aborts
from pdforensics.analysis.pdpath.earlier import EarlierCauses
from pdforensics.analysis.pdpath.model import Clue, Label

_ENVELOPE = "SCHEDULER_EXCEPTION"
_THREAD_ENVELOPE = "THREAD_EXCEPTION"  # Python's "Exception in thread Thread-5 (target):"
_NEAR_LINES = 200  # an exception line this close to an envelope belongs to its traceback


#: noise a reader recognised on a line (a known harmless warning): a generic cause of the
#: same line (a signature's "NCCL WARN") is that noise too
_HARMLESS = frozenset({"NCCL_HARMLESS_WARN"})


def _relabel_same_line(clues: list[Clue], marked: Callable[[Clue], bool], label: Label
                       ) -> list[Clue]:
    """The causes on a line that a ``marked`` clue reads otherwise, relabelled ``label``."""
    marks: dict[tuple[str, int | None], Clue] = {
        (c.source, c.line): c for c in clues if c.line is not None and marked(c)}
    if not marks:
        return clues
    return [replace(c, label=label, why=f"{c.why}; the line says {m.key}: {m.why}")
            if c.label == "cause" and (m := marks.get((c.source, c.line))) is not None else c
            for c in clues]


def _same_line_harmless(clues: list[Clue]) -> list[Clue]:
    return _relabel_same_line(clues, lambda c: c.key in _HARMLESS, "noise")


def _same_line_consequence(clues: list[Clue]) -> list[Clue]:
    return _relabel_same_line(
        clues, lambda c: c.label == "consequence" and c.strength >= 2, "consequence")


def _envelopes(clues: list[Clue]) -> list[Clue]:
    out = list(clues)
    exc = [i for i, c in enumerate(out) if c.key in ("PYTHON_EXCEPTION", "PYTHON_TRACEBACK_CUT")]
    for i, c in enumerate(out):
        if c.key == _THREAD_ENVELOPE and c.line is not None and c.suspect is not None:
            # the thread a traceback belongs to: its exception names that thread
            after = [j for j in exc if out[j].source == c.source and out[j].line is not None
                     and 0 < out[j].line - c.line <= _NEAR_LINES]  # type: ignore[operator]
            for j in after[:1]:
                if out[j].suspect is None:
                    out[j] = replace(out[j], suspect=c.suspect)
            continue
        if c.key != _ENVELOPE or c.line is None:
            continue
        near = [j for j in exc if out[j].source == c.source and out[j].line is not None
                and abs(out[j].line - c.line) <= _NEAR_LINES]  # type: ignore[operator]
        if not near:
            continue
        j = min(near, key=lambda k: abs((out[k].line or 0) - (c.line or 0)))
        out[i] = replace(c, label="consequence",
                         why="the scheduler process died of the exception its traceback ends "
                             f"with (line {out[j].line})")
        if out[j].rank is None and c.rank is not None:
            out[j] = replace(out[j], rank=c.rank, role=out[j].role or c.role,
                             time=out[j].time or c.time)
    return out


#: sglang's failure reports: each quotes the KVTransferError reason of an earlier failure
REPORT_KEYS = frozenset({"DECODE_HANDSHAKE_FAILED", "DECODE_TRANSFER_FAILED",
                         "PREFILL_BOOTSTRAP_FAILED", "PREFILL_TRANSFER_FAILED"})


def _reports(clues: list[Clue]) -> list[Clue]:
    out = list(clues)
    earlier = EarlierCauses([c for c in out if c.label == "cause" and c.strength >= 2])
    report_lines = {(c.source, c.line) for c in out if c.key in REPORT_KEYS}
    on_line: dict[tuple[str, int | None], list[int]] = {}  # the report lines' clues
    first_of: dict[tuple[str, str], Clue] = {}  # (source, key) -> its first cause
    for i, c in enumerate(out):
        if (c.source, c.line) in report_lines:
            on_line.setdefault((c.source, c.line), []).append(i)
        if c.label == "cause":
            first_of.setdefault((c.source, c.key), c)
    for i, c in enumerate(out):
        on_report = (c.source, c.line) in report_lines
        if c.label != "cause" or (c.strength != 1 and not on_report):
            continue
        same = first_of.get((c.source, c.key))
        if same is not None and same is not c and _repeats(c, same):
            continue  # the first cause said again (another process, another request)
        up = earlier.first_before(c)
        if up is None or on_report and any(_repeats(clues[j], up)
                                           for j in on_line[(c.source, c.line)]):
            continue  # (a report line that says the first failure again, for another request)
        out[i] = replace(c, label="consequence", why=f"{c.why}; follows {up.key} at {up.where()}")
    return out


#: a generic warning SGLang prints (once) just as it records a specific failure: the announcement
#: -> the key of the record it announces (sglang 0.5.23 disaggregation/common/conn.py
#: CommonKVReceiver.poll: warning_once, then record_failure "Request R timed out ... in
#: KVPoll.WaitingForInput")
ANNOUNCES = {"KV_DONE_SIGNAL_MISSING": "KV_WAITING_TIMEOUT"}
_ANNOUNCED = frozenset(ANNOUNCES.values())


def _by_line(clues: list[Clue], wanted: Callable[[Clue], bool],
             group: Callable[[Clue], tuple[str, ...]]) -> dict[tuple[str, ...], list[tuple[int, int]]]:
    """(line, index) of the wanted clues that have a line, per group, in line order: the
    nearest one before or after a line is then a bisection away."""
    index: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    for i, c in enumerate(clues):
        if c.line is not None and wanted(c):
            index.setdefault(group(c), []).append((c.line, i))
    for found in index.values():
        found.sort()
    return index


def _announcements(clues: list[Clue]) -> list[Clue]:
    """An announcement followed in its source by the failure it announces is that failure's
    generic restatement: the record (with its room and reason) is the cause."""
    out = list(clues)
    records = _by_line(out, lambda c: c.key in _ANNOUNCED, lambda c: (c.source, c.key))
    for i, c in enumerate(out):
        want = ANNOUNCES.get(c.key)
        if want is None or c.label != "cause" or c.line is None:
            continue
        found = records.get((c.source, want), [])
        k = bisect.bisect_right(found, (c.line, len(out)))  # the first record after it
        rec = out[found[k][1]] if k < len(found) else None
        if rec is not None and _same_burst(c, c, rec):
            out[i] = replace(c, label="consequence",
                             why=f"{c.why}; SGLang prints it as it records {rec.key} at "
                                 f"{rec.where()}, the failure itself")
    return out


def _generic_after_known(clues: list[Clue]) -> list[Clue]:
    """A generic error line (read_errors.py) printed within a burst after a failure a reader
    knows, in the same source, says that failure again as a log level: its consequence."""
    known = _by_line(clues, lambda c: c.key != "LOG_ERROR" and c.label in ("cause", "consequence"),
                     lambda c: (c.source,))
    if not known:
        return clues
    out = list(clues)
    first: dict[str, int] = {}  # source -> the index of its first generic error line
    for i, c in enumerate(out):
        if c.key != "LOG_ERROR" or c.label != "cause" or c.line is None:
            continue
        j = first.setdefault(c.source, i)
        if j != i and _repeats(c, clues[j]):  # the first one said again (another process):
            out[i] = replace(c, label=out[j].label, why=out[j].why)  # read as the first is
            continue
        found = known.get((c.source,), [])
        k = bisect.bisect_left(found, (c.line, -1)) - 1  # the last known failure before it
        if k < 0:
            continue
        prev = clues[found[k][1]]
        if _same_burst(prev, prev, c):
            out[i] = replace(c, label="consequence",
                             why=f"{c.why}; printed right after {prev.key} at {prev.where()}")
    return out


#: a burst: error lines of one source at most this far apart report one failure
_BURST_S = 1.0
_DIGITS = linear.compile(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{12,}|\d+")


def _message(c: Clue) -> str:
    """The clue's text without its numbers (times, pids, addresses): a repeat has the same."""
    return _DIGITS.sub("#", c.text)


_NO_DIGITS = str.maketrans("", "", "0123456789")


def _repeats(c: Clue, first: Clue) -> bool:
    """``c`` says again what ``first`` said (another process, another host): the same key and
    the same message but for its numbers (decimal ones compared cheaply first; hex addresses,
    ``0x7f..``, and request ids, 32 hex digits, need the pattern)."""
    if c.key != first.key:
        return False
    a, b = c.text.translate(_NO_DIGITS), first.text.translate(_NO_DIGITS)
    if a == b:
        return True
    if a[:_HEAD_MIN] == b[:_HEAD_MIN] and _same_head(_message(c), _message(first)):
        return True  # the same error, said of another operation after " | " or ": " (numbers
        # as one mark each: "shmutils.cc:72 NCCL" has no ": " a removed number would make)
    return ("0x" in c.text or abs(len(c.text) - len(first.text)) <= 4) \
        and _message(c) == _message(first)


_HEAD_MIN = 60  # characters two lines share before they say which operation failed


def _same_head(a: str, b: str) -> bool:
    """The two lines (digits dropped) agree up to a separator past _HEAD_MIN characters, and
    for most of their length: one message template, its last field another operation's."""
    n = min(len(a), len(b))
    if a[:_HEAD_MIN] != b[:_HEAD_MIN]:
        return False
    lo, hi = _HEAD_MIN, n  # the shared prefix's length, by halving (slices compare in C)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    k = lo
    if k < _HEAD_MIN or k * 5 < n * 3:
        return False
    return any(sep in a[_HEAD_MIN // 2:k] for sep in (" | ", ": "))


def _restates(later: Clue, first: Clue) -> bool:
    """The later line says what the first said (the kernel's Xid 79 line, then "GPU has fallen
    off the bus."): the same fact twice, not a consequence."""
    tail = later.text.rsplit(": ", 1)[-1].strip()
    return len(tail) >= 12 and tail in first.text


_BURST_LINES = 6  # untimed lines: a burst's lines follow each other this closely


def _same_burst(first: Clue, prev: Clue, c: Clue) -> bool:
    """``c`` belongs to the burst ``first`` opened (``prev``: its latest line): the same
    source, within _BURST_S of the first by time, or (untimed) within _BURST_LINES of the
    previous line of the burst."""
    if c.source != first.source:
        return False
    if c.time is not None and first.time is not None:
        return c.time - first.time <= _BURST_S
    if c.line is not None and prev.line is not None:  # a line without a time: by position
        return 0 <= c.line - prev.line <= _BURST_LINES
    return False


def _bursts(clues: list[Clue]) -> list[Clue]:
    """In one source, the error lines printed within _BURST_S of a first one report the same
    failure through the layers it crossed (an RDMA device refused, so no NIC, so no transport,
    so no client): the first says why, the later ones are its consequences. A later line that
    repeats the first message (another process, another host) is the same cause again, and a
    stronger later line is not demoted under a weaker one. A cause without a stage takes the
    stage its consequences in the burst name (where the failure surfaced), and a burst that
    ends in a failed start-up (a transport not installed, a backend not created) is at
    ``startup``."""
    out = list(clues)
    order = sorted((i for i, c in enumerate(out) if c.label == "cause"
                    and (c.time is not None or c.line is not None)),
                   key=lambda i: (out[i].source, out[i].line or 0, out[i].time or 0))
    first: Clue | None = None
    first_i = -1
    prev: Clue | None = None
    for i in order:
        c = out[i]
        if first is None or prev is None or not _same_burst(first, prev, c):
            first, first_i, prev = c, i, c
            continue
        prev = c
        if c.strength > first.strength or _repeats(c, first) or c.key == first.key \
                and c.rank != first.rank or _restates(c, first):
            continue
        out[i] = replace(c, label="consequence",
                         why=f"{c.why}; printed right after {first.key} at {first.where()} "
                             "(one failure through the layers)")
        if c.stage is not None and (first.stage is None or c.stage == "startup"):
            first = out[first_i] = replace(first, stage=c.stage)  # start-up failed: no path yet
    # a line is one piece of evidence: it stays a cause where any clue on it stays one
    kept = {(c.source, c.line) for c in out if c.label == "cause"}
    return [clues[i] if out[i] is not clues[i] and out[i].label == "consequence"
            and clues[i].label == "cause" and (c.source, c.line) in kept
            else c for i, c in enumerate(out)]


_RECORD_LINES = 6  # a failure report's record: the report line, rid, room, the exception


def _records(clues: list[Clue]) -> list[Clue]:
    """A failure report whose own record quotes the KVTransferError it ends with (sglang
    prints "Prefill bootstrap failed for request rank=0", the rid and room, then "with exception
    KVTransferError(...):" and its reason) reports that error: the quoted reason is the cause,
    on the report's stage, side and rank."""
    out = list(clues)
    quoted = {(c.source, c.line): i for i, c in enumerate(out)
              if c.key == "KV_TRANSFER_ERROR" and c.line is not None}
    for i, c in enumerate(out):
        if c.key not in REPORT_KEYS or c.label != "cause" or c.line is None:
            continue
        j = next((quoted[(c.source, c.line + d)] for d in range(_RECORD_LINES + 1)
                  if (c.source, c.line + d) in quoted), None)
        if j is None:
            continue
        k = out[j]
        out[j] = replace(k, label="cause", stage=k.stage or c.stage, side=k.side or c.side,
                         rank=k.rank or c.rank, role=k.role or c.role, wedge=c.wedge,
                         strength=max(k.strength, c.strength, 2))
        if k.line != c.line:  # (one line that reports and quotes is one piece of evidence)
            out[i] = replace(c, label="consequence",
                             why=f"{c.why}; its record quotes the error at line {k.line}")
    return out


#: what a server shows when its own scheduler process is stopped, dead or missing: its queues
#: and counters freeze, its scheduler endpoints hang, its GPU idles with work
_SYMPTOMS = frozenset({"DECODE_TRANSFER_STUCK", "DECODE_PREALLOC_STUCK", "PREFILL_BOOTSTRAP_STUCK",
                       "PREFILL_INFLIGHT_STUCK", "REQUESTS_FROZEN", "SCHEDULER_ENDPOINT_HANG",
                       "SCHEDULER_PROBE_HANG", "GPU_IDLE_WITH_WORK"})


def _broken_process(clues: list[Clue]) -> list[Clue]:
    """A server whose scheduler process is stopped, dead or missing (the rule PROCESS_STATE,
    "decode-0 decode:21345: scheduler pid 24197 is stopped"): that server's frozen queues,
    frozen requests and hung endpoints follow from it, wherever their rule would point."""
    broken = {c.text.split(": ", 1)[0]: c for c in clues
              if c.key == "PROCESS_STATE" and c.label == "cause" and ": " in c.text}
    if not broken:
        return clues
    out = []
    for c in clues:
        head = c.text.split(": ", 1)[0] if ": " in c.text else None
        up = broken.get(head) if head is not None and c.key in _SYMPTOMS else None
        if up is not None and c.label == "cause":
            c = replace(c, label="consequence",
                        why=f"{c.why}; the server's own scheduler process is not running "
                            f"({up.text.split(': ', 1)[1][:80]}): this follows from it")
        out.append(c)
    return out


#: stack clues of a rank waiting in a collective (read_stacks.py), and the call it waits in
_COLLECTIVE_WAITS = frozenset({"STACK_WAITS_IN_COLLECTIVE", "STACK_FORWARD_IN_COLLECTIVE"})
_WAITS_IN = linear.compile(r" waits in ([\w.<>]{1,200}) \(")
_RANK_RANGE = linear.compile(r"(\d{1,4})-(\d{1,4})$")


def _ranks_in(label: str) -> int:
    """How many ranks a rank label stands for ("TP1-3": 3, "TP0,TP1": 2)."""
    return sum(int(m.group(2)) - int(m.group(1)) + 1 if (m := _RANK_RANGE.search(part))
               is not None else 1 for part in label.split(","))


def _diverged(clues: list[Clue]) -> list[Clue]:
    """Ranks caught waiting in different collectives have diverged: each waits for peers that
    are in another call. The one rank alone in its collective while the others wait together in
    another took a path they did not (an extra or a missing collective): it is the odd one out
    and becomes the cause, the others' waits its consequences."""
    waits = [(i, m.group(1)) for i, c in enumerate(clues) if c.key in _COLLECTIVE_WAITS
             and c.rank is not None and (m := _WAITS_IN.search(c.text)) is not None]
    calls: dict[str, list[int]] = {}
    for i, call in waits:
        calls.setdefault(call, []).append(i)
    if len(calls) != 2:
        return clues
    counts = {call: sum(_ranks_in(clues[i].rank or "") for i in idx) for call, idx in calls.items()}
    alone = [call for call, n in counts.items() if n == 1]
    if len(alone) != 1 or max(counts.values()) < 2:
        return clues
    i = calls[alone[0]][0]
    out = list(clues)
    others = ", ".join(sorted({clues[j].rank or "" for call, idx in calls.items()
                               if call != alone[0] for j in idx}))
    out[i] = replace(clues[i], label="cause", suspect=clues[i].rank,
                     why=f"the ranks wait in different collectives: {clues[i].rank} alone in "
                         f"{alone[0]}, {others} in another; their collective calls diverged "
                         "and the rank alone took the path the others did not")
    return out


#: NCCL's error-code summary as an exception or a caller prints it ("NCCL error: unhandled
#: cuda error (run with NCCL_DEBUG=INFO for details)"): its detail is NCCL's own WARN lines
_NCCL_SUMMARY = "NCCL_DEBUG="
_NCCL_DETAIL = "NCCL WARN"
#: torch's exception wrapping the code an NCCL call returned ("NCCL error in: .../
#: ProcessGroupNCCL.cpp:784, unhandled cuda error, NCCL version 2.7.8"), older torch's summary
_TORCH_WRAPPER = "NCCL error in: "


def _nccl_summaries(clues: list[Clue]) -> list[Clue]:
    """An NCCL error-code summary (or torch's exception wrapping the code) in a source that
    also holds NCCL's WARN lines reports the
    failure those lines detail (whichever was printed first: stderr and NCCL's log are
    buffered apart): a consequence."""
    detailed = {c.source for c in clues if _NCCL_DETAIL in c.text and _NCCL_SUMMARY not in c.text}
    if not detailed:
        return clues
    return [replace(c, label="consequence",
                    why=f"{c.why}; NCCL's error-code summary: its WARN lines say what failed")
            if c.label == "cause" and c.source in detailed and (
                _NCCL_SUMMARY in c.text and "for details" in c.text or _TORCH_WRAPPER in c.text)
            else c for c in clues]


#: a rank's report that a peer failed (naming it where it can: read_collective.py's monitored
#: barrier; SGLang's "could finish the model loading, but there are other ranks ...")
PEER_BLAME = frozenset({"BARRIER_PEER_FAILED", "OTHER_RANK_LOAD_FAILED"})
_BLAME_REACH = 40  # lines after the report that its rank's own failure is printed in


def _blames_peer(clues: list[Clue]) -> list[Clue]:
    """After a rank reports the peer it got an error from, that rank's own failure (the
    traceback just after it in the same source) follows from the peer's: a consequence."""
    reports = [c for c in clues if c.key in PEER_BLAME and c.line is not None]
    if not reports:
        return clues
    out = []
    for c in clues:
        if c.label == "cause" and c.line is not None and any(
                r.source == c.source and 0 < c.line - (r.line or 0) <= _BLAME_REACH for r in reports):
            c = replace(c, label="consequence",
                        why=f"{c.why}; the rank reported just before that a peer failed first")
        out.append(c)
    return out


def _continuations(clues: list[Clue]) -> list[Clue]:
    """A message wrapped onto the next line ("... Multicast memory" / "  of size 2097152 : CUDA
    error 401 ..."): the indented line that goes on in lower case is the same message as the
    cause on the line before it, so it is a cause too, on that line's side."""
    causes = {(c.source, c.line): c for c in clues if c.label == "cause" and c.line is not None}
    out = []
    for c in clues:
        head = causes.get((c.source, c.line - 1)) if c.line is not None else None
        if c.label == "consequence" and head is not None and c.text[:1] == " " \
                and c.text.lstrip()[:1].islower():
            c = replace(c, label="cause", side=head.side or c.side,
                        why=f"{c.why}; it goes on the message of the line before it")
        out.append(c)
    return out


#: a collective's error that says the other end went away: what ended the peer came first
_PEER_WENT = ("closed by peer", "reset by peer")


def _peer_went_away(clues: list[Clue]) -> list[Clue]:
    """An exception of a collective that reports its peer closing or resetting the
    connection ("RuntimeError: [gloo/transport/tcp/pair.cc] Connection closed by peer") is a
    consequence of whatever ended that peer, never its cause."""
    return [replace(c, label="consequence", why=f"{c.why}; the peer closed the connection: "
                    "what ended the peer is upstream")
            if c.label == "cause" and c.key == "PYTHON_EXCEPTION" and c.side == "collective"
            and any(w in c.text.lower() for w in _PEER_WENT) else c for c in clues]


def demote_consequences(clues: list[Clue]) -> list[Clue]:
    """The clues with causes that follow from other evidence relabelled as consequences."""
    return _continuations(_reports(_bursts(_generic_after_known(_announcements(_records(
        _envelopes(_broken_process(_same_line_consequence(_same_line_harmless(_nccl_summaries(_blames_peer(
            _peer_went_away(_diverged(self_aborts(clues)))))))))))))))
