"""The words of a diagnosis: its headline, the cause -> consequence links, the next checks."""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Link

_NEXT: dict[str, str] = {
    "prefill": "read the prefill server's log and stacks around the first failure (the rooms "
               "and rids named), and its /health_generate",
    "decode": "read the decode server's log and stacks around the first failure, and its "
              "prealloc/transfer queue gauges",
    "router": "read the router log around the first error and /workers (breaker state)",
    "transfer_engine": "check the KV transfer engine (Mooncake/NIXL) on both ends: its log, "
                       "the RDMA/TCP devices it uses, the peer's segment registration",
    "collective": "compare the ranks' last completed collective (NCCL watchdog SeqNum, Flight "
                  "Recorder): the rank behind is the one to read",
    "gpu": "read the kernel log (Xid) and nvidia-smi -q of that GPU",
    "host": "read the host's kernel log (OOM killer, network interface) around that time",
    "client": "the client waits on the server: look at the server it calls",
}


def link_chain(clues: Sequence[Clue], p: int | None) -> list[Link]:
    """The primary cause linked to each consequence that comes after it (or shares its rid,
    room or rank); consequences before it stay unlinked."""
    if p is None:
        return []
    c = clues[p]
    out = []
    linked: set[tuple[str, int | None]] = set()
    for i, x in enumerate(clues):
        if x.label != "consequence" or i == p or (x.source, x.line) in linked:
            continue  # one link per consequence line (a line matches several keys)
        if set(c.rids) & set(x.rids):
            why = "same rid"
        elif set(c.rooms) & set(x.rooms):
            why = "same bootstrap room"
        elif c.rank is not None and c.rank == x.rank:
            why = f"same rank {c.rank}"
        elif i > p:
            why = "after it" + (" in the same file" if x.source == c.source else "")
        else:
            continue
        linked.add((x.source, x.line))
        out.append(Link(p, i, why))
    return out


def headline_of(clues: Sequence[Clue], p: int | None, stage: str, side: str,
                suspect: str | None, wedge: bool | None) -> str:
    state = {True: "requests stuck", False: "no wedge", None: "wedge not established"}[wedge]
    if p is None:
        where = f" on {side}" if side != NOT_ESTABLISHED else ""
        busy = f", work in {stage}" if stage not in ("not_applicable", NOT_ESTABLISHED) else ""
        return (f"no failure in the evidence{where}{busy} ({state})" if clues
                else "no evidence read")
    look = side if side != NOT_ESTABLISHED else "side not established"
    who = f" ({suspect})" if suspect else ""
    return f"{clues[p].key} at stage {stage}: look at {look}{who} ({state})"


def checks_for(clues: Sequence[Clue], p: int | None, side: str, stage: str) -> list[str]:
    out = []
    if side in _NEXT:
        out.append(_NEXT[side])
    elif p is not None:
        out.append("the side is not established: read each candidate's log and stacks around "
                   "the first cause, on the same rid, bootstrap room or rank")
    if p is not None and clues[p].rooms:
        rooms = ", ".join(str(r) for r in clues[p].rooms[:5])
        out.append(f"find bootstrap room(s) {rooms} in the other side's log")
    if stage == NOT_ESTABLISHED and p is not None:
        out.append("the stage is not established: a py-spy dump of every rank and two /metrics "
                   "samples would show where requests stop")
    return out
