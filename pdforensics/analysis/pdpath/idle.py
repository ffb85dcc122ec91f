"""The reading when the evidence holds no failure (a control: busy, idle, starting up).

- The roles: what the clues say (a server's --disaggregation-mode, role-only batch fields,
  a stack's PD event loop, a scrape's engine_type), else what the batch lines of one log say
  (only "Decode batch" lines: decode; only "Prefill batch" lines: prefill; both: a unified
  server, which has no PD path).
- Startup: warm-up seen and the server never reported ready, or ready with no batch after it:
  the stage is ``startup`` and there is nothing on a side to look at.
- Work at the end: the last busy batch line (running or queued requests) of the one role,
  within 10 s of where its log ends (or a stack's active forward): that role's forward stage.
  Otherwise the server was idle when the evidence ends: ``not_applicable``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Side, Stage

_IDLE_AFTER_S = 10.0
_PD = ("prefill", "decode", "router")
#: start-up under way: SGLang's warm-up, NCCL's communicator bootstrap, the transfer engine
#: starting (analysis/pdpath/read_collective.py, read_host.py)
_STARTING = frozenset({"WARMUP", "NCCL_BOOTSTRAP", "TRANSFER_ENGINE_STARTUP"})


def batch_roles(clues: Sequence[Clue]) -> dict[str, str]:
    """source -> prefill / decode / unified, from the kinds of batch line it shows."""
    kinds: dict[str, set[str]] = {}
    for c in clues:
        if c.key == "BATCH_STATS":
            kinds.setdefault(c.source, set()).add(
                "decode" if "decode batch" in c.text.lower() else "prefill")
    return {src: (k.pop() if len(k) == 1 else "unified") for src, k in kinds.items()}


def roles_of(clues: Sequence[Clue]) -> set[str]:
    """The PD roles the evidence names, batch-line kinds included."""
    named = {c.role for c in clues if c.role in _PD}
    from_batches = set(batch_roles(clues).values())
    if named:
        return named
    return {r for r in from_batches if r in _PD} if "unified" not in from_batches else set()


def _startup(clues: Sequence[Clue]) -> bool:
    ready = [c for c in clues if c.key == "SERVER_READY"]
    warm = [c for c in clues if c.key in _STARTING]
    if not ready:
        return bool(warm)
    last_ready = max((c.time or 0.0, c.line or 0) for c in ready)
    return not any((c.time or 0.0, c.line or 0) > last_ready for c in clues
                   if c.key in ("BATCH_STATS", "REQUEST_RECEIVED", "STACK_ACTIVE_FORWARD"))


def _busy_at_end(clues: Sequence[Clue], role: str) -> Stage | None:
    busy = [c for c in clues if c.label == "progress" and c.stage is not None
            and c.stage.endswith("_forward") and (c.role in (None, role))]
    if not busy:
        return None
    last = busy[-1]
    ends = [c.time for c in clues if c.key == "LOG_END" and c.source == last.source and c.time]
    if last.time is not None and ends and max(ends) - last.time > _IDLE_AFTER_S:
        return None
    return last.stage


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
        return "not_applicable", NOT_ESTABLISHED
    role = next(iter(roles))
    side: Side = role  # type: ignore[assignment]
    return _busy_at_end(clues, role) or "not_applicable", side
