"""The reading when the evidence holds no failure (a control: busy, idle, starting up).

- The roles: what the clues say (a server's --disaggregation-mode, role-only batch fields,
  a stack's PD event loop, a scrape's engine_type), else what the batch lines of one log say
  (only "Decode batch" lines: decode; only "Prefill batch" lines: prefill; both: a unified
  server, which has no PD path).
- Startup: warm-up (or a collective's or the transfer engine's start-up) seen and the server
  never reported ready: the stage is ``startup`` and there is nothing on a side to look at.
  A server that reported ready (or a test run that completed) has finished starting, whatever
  follows.
- Otherwise requests stop nowhere: ``not_applicable``, busy or idle (batch lines that keep
  coming are work moving). Only a stack sample's active forward, one instant with no time
  series to show it moving, places the reading at that role's forward stage.
"""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Side, Stage

_PD = ("prefill", "decode", "router")
#: start-up under way: SGLang's warm-up, NCCL's communicator bootstrap, the transfer engine
#: starting (analysis/pdpath/read_collective.py, read_host.py)
_STARTING = frozenset({"WARMUP", "NCCL_BOOTSTRAP", "TRANSFER_ENGINE_STARTUP"})


def batch_roles(clues: Sequence[Clue]) -> dict[str, str]:
    """source -> prefill / decode / unified, from the kinds of batch line it shows."""
    kinds: dict[str, set[str]] = {}
    for c in clues:
        if c.key == "BATCH_STATS":
            kinds.setdefault(c.source, set()).add(  # ("ecode batch": Decode or decode)
                "decode" if "ecode batch" in c.text or "DECODE BATCH" in c.text else "prefill")
    return {src: (k.pop() if len(k) == 1 else "unified") for src, k in kinds.items()}


def roles_of(clues: Sequence[Clue]) -> set[str]:
    """The PD roles the evidence names, batch-line kinds included."""
    named = {c.role for c in clues if c.role in _PD}
    from_batches = set(batch_roles(clues).values())
    if named:
        return named
    return {r for r in from_batches if r in _PD} if "unified" not in from_batches else set()


#: evidence that start-up finished: a server that reported ready, a test run that completed,
#: a benchmark whose requests completed (its own warm-up is the client's, not a server's)
_PAST_STARTUP = frozenset({"SERVER_READY", "NCCL_TEST_PASSED", "BENCH_REQUESTS_DONE",
                           "BENCH_EVAL_DONE"})


def _startup(clues: Sequence[Clue]) -> bool:
    ready = [c for c in clues if c.key in _PAST_STARTUP]
    warm = [c for c in clues if c.key in _STARTING]
    return not ready and bool(warm)


def _active_forward(clues: Sequence[Clue], role: str) -> Stage | None:
    """The forward stage of the role's last stack sample caught in its forward, if any."""
    busy = [c.stage for c in clues if c.key == "STACK_ACTIVE_FORWARD" and c.stage is not None
            and c.stage.endswith("_forward") and c.role in (None, role)]
    return busy[-1] if busy else None


def idle_reading(clues: Sequence[Clue]) -> tuple[Stage, Side]:
    """(stage, side) of evidence without a failure."""
    roles = roles_of(clues)
    if _startup(clues):
        return "startup", NOT_ESTABLISHED
    if not any(c.label == "progress" or c.wedge is False for c in clues):
        # SGLang evidence that shows neither work nor an idle server (only probes): open
        sglang = any(c.key in ("SGLANG_SERVER", "SERVER_ROLE") for c in clues)
        return ("not_established" if sglang else "not_applicable"), NOT_ESTABLISHED
    # a server printing both kinds of batch line is a unified one: it has no PD path
    if "unified" in batch_roles(clues).values() or len(roles) != 1:
        # no PD role: the one side the evidence is of, where it names one (an HTTP client's
        # open connections in a goroutine dump)
        sides = {c.side for c in clues if c.side is not None}
        return "not_applicable", (sides.pop() if not roles and len(sides) == 1
                                  else NOT_ESTABLISHED)
    role = next(iter(roles))
    side: Side = role  # type: ignore[assignment]
    return _active_forward(clues, role) or "not_applicable", side
