"""One reasoning pass over the clues of a capture or of loose files -> a `Diagnosis`.

1. Join (join.py): a cause becomes a consequence when the evidence shows what it follows
   from (the same line says "from another rank" or "Aborted by AbortReq"; a scheduler's
   "hit an exception" wraps an exception line of its own traceback; a failure report follows
   a stronger cause of the same source, rid or bootstrap room).
2. The upstream cause: the strongest remaining cause, earliest first; its stage, side and
   suspect are the reading, filled in from the role of the server that printed it.
3. Where causes of equal strength point at different sides, the side is "not_established"
   and `decide` says what would tell them apart; a suspect is named only when the evidence
   names one (a rank that is the odd one out, an address, a thread), never when every rank
   reports the same.
4. No cause but consequences (an abort, a kill): the stage of the failure they report, the
   cause not established. No failure at all (a control): idle.py, and never a wedge.
"""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics.analysis.pdpath.idle import idle_reading, roles_of
from pdforensics.analysis.pdpath.join import PEER_BLAME, demote_consequences
from pdforensics.analysis.pdpath.model import (
    NOT_ESTABLISHED,
    Claim,
    Clue,
    Confidence,
    Diagnosis,
    Side,
    Stage,
)
from pdforensics.analysis.pdpath.narrate import checks_for, headline_of, link_chain

_FORWARD: dict[str, Stage] = {"prefill": "prefill_forward", "decode": "decode_forward"}
_SGLANG_KEYS = frozenset({"SGLANG_SERVER", "SERVER_ROLE", "SERVER_INFO_ANSWERED", "BATCH_STATS", "SERVER_READY",
                          "WARMUP", "WATCHDOG_TIMEOUT", "SCHEDULER_EXCEPTION"})


def _order(clues: Sequence[Clue]) -> list[int]:
    """Indexes in evidence order: by time where known, and within one source by line (a line
    with no time of its own happened after the stamped line before it, or, before the first
    stamp, no later than the one after it); as read otherwise."""
    eff = [c.time for c in clues]
    first_of: dict[str, int] = {}
    by_source: dict[str, list[int]] = {}
    untimed: set[str] = set()  # sources with a line of no time of its own
    for i, c in enumerate(clues):
        first_of.setdefault(c.source, i)
        if c.line is not None:
            by_source.setdefault(c.source, []).append(i)
            if c.time is None:
                untimed.add(c.source)
    for source in untimed:
        idx = by_source[source]
        idx.sort(key=lambda i: clues[i].line or 0)
        last: float | None = None
        for i in idx:  # carried forward from the stamped line before
            last = clues[i].time if clues[i].time is not None else last
            eff[i] = last
        after: float | None = None
        for i in reversed(idx):  # before the first stamp: the one after it
            after = clues[i].time if clues[i].time is not None else after
            if eff[i] is None:
                eff[i] = after
    return sorted(range(len(clues)), key=lambda i: (
        eff[i] is None, eff[i] or 0, first_of[clues[i].source], clues[i].line or 0, i))


def is_sglang(clues: Sequence[Clue]) -> bool:
    """Is any of the evidence SGLang's own (a role, a rank prefix, its own messages)?"""
    return any(c.key in _SGLANG_KEYS or c.role in ("prefill", "decode") or
               (c.rank is not None and c.rank.startswith(("TP", "DP", "PP"))) for c in clues)


#: consequences seen in one instant (a stack sample): a rank waiting in a collective is what
#: every healthy TP forward does between kernels; it stands only where its role shows no progress
_MOMENTARY = frozenset({"STACK_FORWARD_IN_COLLECTIVE", "STACK_WAITS_IN_COLLECTIVE",
                        "STACK_FORWARD_WAITS_GPU"})


#: an LLM serving engine's code, as a stack's paths or a log's words name it: a failure in it
#: is on a request path, even where the evidence does not say which stage
_ENGINES = ("sglang", "vllm", "tensorrt_llm", "lmdeploy")


def _serving(c: Clue) -> bool:
    if c.key == "SERVING_ENGINE":  # (read_engine named the engine whose words the text holds)
        return True
    low = c.text.lower()
    return any(e in low for e in _ENGINES)


def _moving(clues: Sequence[Clue], role: str | None) -> bool:
    """Evidence over time that the role's work moves (a counter rose, a busy batch line)."""
    return any(c.label == "progress" and c.strength >= 2 and c.role == role for c in clues)


def _primary(clues: Sequence[Clue], label: str = "cause") -> int | None:
    picked = [i for i in range(len(clues)) if clues[i].label == label]
    if label == "consequence":
        picked = [i for i in picked
                  if not (clues[i].key in _MOMENTARY and _moving(clues, clues[i].role))]
        # a consequence placed on the path first; else one that at least names a side or a
        # suspect (the thread that was handling an exception when the process aborted)
        # or a wait that ran out (something was held)
        picked = [i for i in picked if clues[i].stage is not None] or [
            i for i in picked if clues[i].side is not None or clues[i].suspect is not None] or [
            i for i in picked if clues[i].wedge and clues[i].line is not None]
    if not picked:
        return None
    best = max(clues[i].strength for i in picked)
    return next(i for i in picked if clues[i].strength == best)


def _side_of(c: Clue, roles: set[str]) -> Side | None:
    if c.side is not None:
        return c.side
    role = c.role or (next(iter(roles)) if len(roles) == 1 else None)
    return role if role in ("prefill", "decode", "router") else None  # type: ignore[return-value]


def _file_side(c: Clue, clues: Sequence[Clue]) -> Side | None:
    """The side the consequence lines of a cause's file agree on, for a cause that names none
    (an exception line of its own, then the connector's reports of the transfer it failed;
    not a stack's summary, which is no line of the file)."""
    sides = {x.side for x in clues if x.source == c.source and x.label == "consequence"
             and x.line is not None and x.side is not None and x.side != NOT_ESTABLISHED}
    return sides.pop() if len(sides) == 1 else None


def _stage_of(c: Clue, side: Side | None, roles: set[str], sglang: bool,
              clues: Sequence[Clue] = ()) -> Stage:
    if c.stage is not None:
        return c.stage
    placed = [(x, x.stage) for x in clues if x.source == c.source and x is not c and x.stage
              and x.label in ("cause", "consequence") and x.stage not in ("not_applicable",
                                                                          "not_established")]
    # the stage its file's reports after it agree on (an exception, then the connector's
    # "Handshake failed for request": the stage the failure stopped its request in)
    after = {stage for x, stage in placed if x.label == "consequence" and x.line is not None
             and c.line is not None and x.line > c.line}
    if len(after) == 1:
        return after.pop()
    role = c.role or (next(iter(roles)) if len(roles) == 1 else None)
    if role in _FORWARD and (side in (role, "collective", "gpu") or c.key == "WATCHDOG_TIMEOUT"):
        return _FORWARD[role]
    # else the stage the other failure lines of its file agree on (a c10d timeout with no
    # stage of its own, then the scheduler's traceback through Scheduler.__init__: start-up)
    same = {stage for _x, stage in placed}
    if len(same) == 1:
        return same.pop()
    if _starting_up(c, clues):
        return "startup"
    return NOT_ESTABLISHED if sglang else "not_applicable"


#: words of a failure while a program starts (loads, initialises, registers, sets up)
_STARTUP_WORDS = ("initializ", "initialis", "loading", "load_model", "to start", "starting up",
                  "setup", "set up",
                  # CUDA graphs are captured while the server starts (NCCL refusing to be
                  # captured, SGLang's "Capture cuda graph failed")
                  "captured in a graph", "capture cuda graph")
#: evidence that requests were being served in a source
_SERVING = frozenset({"BATCH_STATS", "REQUEST_RECEIVED", "REQUEST_FINISHED", "STACK_ACTIVE_FORWARD",
                      "REQUEST_SERVED",
                      "BENCH_REQUESTS_DONE", "ROUTER_WORKER_REQUEST_FAILED"})


#: SGLang's and its router's own start-up steps (read_sglang.py): a server that prints them is starting
_SGLANG_STARTING = frozenset({"STARTUP_PHASE", "ROUTER_STARTUP_PHASE"})


def _starting_up(c: Clue, clues: Sequence[Clue]) -> bool:
    """A failure whose own words, or those of the failure lines right after it in its file,
    say the program was starting, or that follows SGLang's start-up steps in its file, in a
    file that shows no request served and no server ready."""
    if c.key.startswith(("STACK_", "PYTHON_FATAL")) or any(
            x.source == c.source and x.key in (*_SERVING, "SERVER_READY") for x in clues):
        return False  # (a stack's frames are no log's words)
    if any(x.source == c.source and x.key in _SGLANG_STARTING and x.line is not None
           and (c.line is None or x.line < c.line) for x in clues):
        return True  # (a conclusion drawn across lines has none: the file's steps place it)
    near = [x.text.lower() for x in clues if x.source == c.source and x.label in ("cause",
            "consequence") and (x is c or (x.line is not None and c.line is not None
                                           and 0 < x.line - c.line <= 6))]
    return any(w in t for t in near for w in _STARTUP_WORDS)


def _as_printed(rank: str) -> str:
    """An SGLang rank label as its log prefix prints it (``DP4_TP4_EP4`` -> ``DP4 TP4 EP4``):
    what an operator greps for."""
    parts = rank.split("_")
    return " ".join(parts) if len(parts) > 1 and all(
        p[:2] in _RANK_KINDS and p[2:].isdigit() for p in parts) else rank


_RANK_KINDS = ("DP", "TP", "PP", "EP", "CP")
#: a collective's error that reports its peer: a read that failed or timed out, a connection
#: the peer closed or reset
_PEER_WORDS = ("read error", "by peer", "timed out", "connection reset", "connection closed")


def _suspect(clues: Sequence[Clue], p: int) -> str | None:
    c = clues[p]
    if c.suspect is not None:
        return c.suspect
    return _ranked_suspect(clues, c) or _pod_of(clues, c)


def _pod_of(clues: Sequence[Clue], c: Clue) -> str | None:
    """The pod a pasted ``kubectl logs POD`` before the cause's line says its log is."""
    pods = [x for x in clues if x.key == "LOGS_OF_POD" and x.source == c.source
            and x.line is not None and c.line is not None and x.line < c.line]
    return max(pods, key=lambda x: x.line or 0).suspect if pods else None


def _ranked_suspect(clues: Sequence[Clue], c: Clue) -> str | None:
    # the ranks of the causes as strong as it (a weaker failure on another rank, a refused
    # transfer beside a crash, does not hide the rank that crashed)
    failing = {x.rank for x in clues if x.rank is not None and x.label == "cause"
               and x.strength >= c.strength}
    if c.rank is None:
        # a cause no rank printed (a transfer engine's glog line, a pid): the one rank whose
        # failure follows it in the same file, when every other rank is silent
        # (an SGLang rank label; a collective's timeout ranks are each the victim of another)
        after = {x.rank for x in clues if x.label == "consequence" and x.rank is not None
                 and x.source == c.source and x.rank[:2] in _RANK_KINDS}
        return _as_printed(after.pop()) if len(after) == 1 and failing <= after \
            and c.side != "collective" else None
    if c.side == "collective" and any(w in c.text.lower() for w in _PEER_WORDS):
        return None  # the rank that reports its peer gone or silent is not the one to blame
    # a rank is named only when it is the odd one out: every rank failing names none
    return _as_printed(c.rank) if failing == {c.rank} else None


def _wedge(clues: Sequence[Clue], p: int | None, quiet_read: bool = False) -> bool | None:
    """``quiet_read``: evidence was read, none of it an SGLang server's, and it holds no failure
    (an idle dump, a healthy scrape, a finished benchmark): nothing in it is held."""
    if p is not None and clues[p].wedge is not None:
        return clues[p].wedge
    # a wait seen in one stack sample holds only where its role shows no progress
    votes = {c.wedge for c in clues if c.label in ("cause", "consequence") and c.wedge is not None
             and not (c.key in _MOMENTARY and _moving(clues, c.role))}
    if len(votes) == 1:
        return votes.pop()
    if not votes and (any(c.label == "progress" for c in clues)
                      or any(c.wedge is False for c in clues)):
        return False  # work moving, or evidence that nothing is held (an idle loop)
    failing = any(c.label in ("cause", "consequence") or c.wedge for c in clues)
    if quiet_read and not votes and not failing:
        return False
    return None


def _rivals(clues: Sequence[Clue], p: int, side: Side | None, roles: set[str]) -> list[int]:
    """Causes as strong as the primary that point at another side (a line's side is the one
    a clue of it names: "Decode transfer failed ... timed out in KVPoll.WaitingForInput" is one
    line that points at prefill, whatever the role of the server printing it)."""
    c = clues[p]
    named: dict[tuple[str, int | None], Side] = {  # the strongest clue of a line names its side
        (x.source, x.line): x.side for x in sorted(clues, key=lambda x: x.strength)
        if x.side is not None and x.line is not None}
    return [i for i, x in enumerate(clues) if i != p and x.label == "cause"
            and x.strength == c.strength
            and (s := named.get((x.source, x.line)) or _side_of(x, roles)) is not None
            and side is not None and s != side]


def diagnose(clues_in: Sequence[Clue], sources_read: int = 0) -> Diagnosis:
    """The reading of every clue of one capture (or one set of loose files); ``sources_read``:
    how many sources the readers went through (0: unknown).

    A server of SGLang's whose evidence shows no failure and no progress is never said to be
    free of a wedge: a wedge is requests silently forgotten, which leaves no error behind."""
    joined = demote_consequences(list(clues_in))
    clues = [joined[i] for i in _order(joined)]
    roles = roles_of(clues)
    sglang = is_sglang(clues)
    serving = sglang or any(map(_serving, clues))  # a serving engine's evidence (read_engine)
    p = _primary(clues)
    decide: list[str] = []
    claims: list[Claim] = []
    confidence: Confidence = "low"
    suspect: str | None = None
    if p is None and (q := _primary(clues, "consequence")) is not None:
        c = clues[q]  # consequences only: the failure they report, its cause not here
        stage = c.stage or (NOT_ESTABLISHED if serving else "not_applicable")
        side = _side_of(c, roles) or NOT_ESTABLISHED
        suspect = c.suspect
        blame = next((x for x in clues if x.key in PEER_BLAME and x.suspect), None)
        if blame is not None:  # a rank named the peer it got its error from: look there
            suspect, side = blame.suspect, blame.side or side
        claims.append(Claim(f"only consequences: {c.key} ends a failure at {stage}; what "
                            "caused it is not in the evidence", (q,)))
        decide.append("the other side's log at the same time (rid / bootstrap room) would show "
                      "the cause")
    elif p is None:
        stage, side = idle_reading(clues)
        confidence = "medium" if clues else "low"
    else:
        c = clues[p]
        side_or_none = c.side or _file_side(c, clues) or _side_of(c, roles)
        rivals = _rivals(clues, p, side_or_none, roles)
        side = side_or_none if side_or_none is not None and not rivals else NOT_ESTABLISHED
        stage = _stage_of(c, side_or_none, roles, serving, clues)
        suspect = _suspect(clues, p)
        for r in rivals[:3]:
            decide.append(f"{c.key} points at {side_or_none}, {clues[r].key} at "
                          f"{_side_of(clues[r], roles)}: the earlier of the two on a shared "
                          "rid, bootstrap room or rank is upstream")
        confidence = "high" if c.strength >= 3 and not rivals else (
            "medium" if c.strength >= 2 and not rivals else "low")
        claims.append(Claim(f"upstream cause: {c.key} ({c.why})", (p,)))
        claims.extend(Claim(f"as strong, on another side: {clues[r].key} ({clues[r].why})", (r,))
                      for r in rivals[:2])
    wedge = _wedge(clues, p, quiet_read=sources_read > 0 and not sglang)
    head = headline_of(clues, p, stage, side, suspect, wedge)
    if p is None and claims:  # consequences only
        head = (f"{clues[claims[0].clues[0]].key} at stage {stage}: what caused it is not in "
                f"the evidence; look at {side if side != NOT_ESTABLISHED else 'both sides'}")
    return Diagnosis(stage=stage, side=side, suspect=suspect, wedge=wedge,
                     root_cause=NOT_ESTABLISHED, confidence=confidence, headline=head,
                     claims=tuple(claims), chain=tuple(link_chain(clues, p)),
                     decide=tuple(decide), next_checks=tuple(checks_for(clues, p, side, stage)),
                     clues=tuple(clues))
