"""When ranks sitting in one frame are a hang: persistence across dumps, the role's progress,
and the next step that fits the frame they sit in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pdforensics.analysis.findings import Severity
from pdforensics.analysis.rules.context import Context
from pdforensics.analysis.stacks_classify import (
    COLLECTIVE,
    CUDA_SYNC,
    IO_WAIT,
    KV_TRANSFER,
    LOCK_WAIT,
    PEER_WAIT,
    SHUTDOWN,
)
from pdforensics.parsers.frames import Frame, ThreadStack
from pdforensics.views.loaded import ProcessView, ServiceView

#: A stack is "stuck" (not just busy in that frame) only when it persists this long.
MIN_STUCK_DUMPS = 3
MIN_STUCK_SPAN_S = 10.0

RoleState = Literal["moving", "frozen", "unjudged"]


@dataclass(frozen=True)
class Persistence:
    """How many consecutive dumps (ending with the latest) showed the same stack, over what time."""

    dumps: int
    span_s: float | None

    @property
    def enough(self) -> bool:
        """Long enough to call the stack stuck (>= 3 dumps spanning >= 10 s)."""
        return (self.dumps >= MIN_STUCK_DUMPS and self.span_s is not None
                and self.span_s >= MIN_STUCK_SPAN_S)

    def text(self) -> str:
        span = f" over {self.span_s:.1f} s" if self.span_s is not None else ""
        return f"{self.dumps} identical dump(s){span}"

    def shortfall(self) -> str:
        """Why this is too little to call stuck (empty when it is enough)."""
        if self.enough:
            return ""
        return (f"only {self.text()}: calling a stack stuck needs >= {MIN_STUCK_DUMPS} dumps "
                f"spanning >= {MIN_STUCK_SPAN_S:.0f} s (capture with --stack-dumps "
                f"{MIN_STUCK_DUMPS}, the default)")


def _exact(t: ThreadStack) -> tuple[tuple[str, str, int | None], ...]:
    return tuple((f.function, f.file, f.line) for f in t.frames)


def history_persistence(history: Sequence[tuple[float, ThreadStack, str]]) -> Persistence:
    """Trailing run of identical stacks in one thread's (taken_at, stack, key) history."""
    if not history:
        return Persistence(0, None)
    last = _exact(history[-1][1])
    i = len(history) - 1
    while i > 0 and _exact(history[i - 1][1]) == last:
        i -= 1
    n = len(history) - i
    return Persistence(n, history[-1][0] - history[i][0] if n >= 2 else None)


def _dumps_of(p: ProcessView) -> list[tuple[float, dict[str, ThreadStack]]]:
    out = []
    for sd in p.stacks:
        own = [d for d in sd.dumps if d.pid == p.info.pid] or list(sd.dumps[:1])
        for d in own:  # with --subprocesses one result holds several processes
            if d.threads:
                out.append((sd.taken_at, {t.thread_id: t for t in d.threads}))
    return out


def frame_persistence(p: ProcessView, frame: Frame) -> Persistence:
    """The longest trailing run of identical stacks among the threads of ``p`` whose latest
    stack holds ``frame`` (same function and file)."""
    dumps = _dumps_of(p)
    if not dumps:
        return Persistence(0, None)
    best = Persistence(0, None)
    for tid, t in dumps[-1][1].items():
        if not any((f.function, f.file) == (frame.function, frame.file) for f in t.frames):
            continue
        hist = [(at, th, "") for at, threads in dumps if (th := threads.get(tid)) is not None]
        got = history_persistence(hist)
        if got.dumps > best.dumps:
            best = got
    return best


def weakest(items: Sequence[Persistence]) -> Persistence:
    """The least persistent of several ranks (all must persist for 'all ranks stuck')."""
    if not items:
        return Persistence(0, None)
    dumps = min(x.dumps for x in items)
    spans = [x.span_s for x in items]
    return Persistence(dumps, None if any(s is None for s in spans)
                       else min(s for s in spans if s is not None))


def service_state(ctx: Context, svc: ServiceView) -> RoleState:
    p = ctx.progress(svc)
    if not p.judged:
        return "unjudged"
    if p.moved:
        return "moving"
    return "frozen" if p.frozen else "unjudged"


def role_state(ctx: Context, svcs: Sequence[ServiceView]) -> RoleState:
    """Moving only when every server of the role progresses; frozen when any is frozen."""
    states = [service_state(ctx, s) for s in svcs]
    if not states:
        return "unjudged"
    if "frozen" in states:
        return "frozen"
    return "moving" if all(s == "moving" for s in states) else "unjudged"


def stuck_severity(persist: Persistence, state: RoleState) -> Severity:
    """critical: persisted and progress frozen or unknown; info: the server progresses."""
    if state == "moving":
        return "info"
    return "critical" if persist.enough else "warning"


def next_step_for(cls: str, frame: Frame | None, role: str | None, one_rank: bool) -> str:
    """The next step that fits the frame the ranks sit in."""
    fn = frame.function if frame else "?"
    who = "that rank" if one_rank else "these ranks"
    v = "s" if one_rank else ""  # that rank waits / these ranks wait
    if cls == SHUTDOWN:
        return (f"The event loop of {who} has exited and the process waits in interpreter "
                f"shutdown ({fn}): read the traceback in the server log just before it "
                "(search 'Traceback', 'Scheduler hit an exception'); the process will not "
                "serve again: restart the server after saving the log.")
    if cls == COLLECTIVE:
        return (f"{who.capitalize()} wait{v} in a collective ({fn}) for a peer that never joined: "
                "find the rank of the group that is not in this collective (its stack, "
                "its host on a multi-node group, a dead or restarted process), then its GPU "
                "(Xid, nvidia-smi) and log; NCCL_DEBUG=INFO and py-spy dump --native show "
                "which NCCL call waits.")
    if cls == PEER_WAIT:
        return (f"{who.capitalize()} wait{v} for one peer's message ({fn}): read the peer it "
                "waits for (rank 0 for the request broadcast, the previous pipeline stage for a "
                "recv): its stack, its log, its GPU.")
    if cls == KV_TRANSFER:
        partner = "the decode side" if role == "prefill" else "the prefill side"
        return (f"{who.capitalize()} poll{v} a KV transfer ({fn}) that never completes: look at "
                f"{partner} (its transfer queues, stacks and log) and at the transfer backend "
                "(mooncake / nixl: metadata and bootstrap server, RDMA devices, "
                "'Lost connection' and 'timed out' log lines).")
    if cls == CUDA_SYNC:
        return (f"{who.capitalize()} wait{v} for the GPU ({fn}): a kernel that never finished. "
                "Check the kernel log for Xid errors and nvidia-smi for the GPU's state; "
                "py-spy dump --native shows the CUDA call.")
    if cls == IO_WAIT:
        return (f"{who.capitalize()} wait{v} on a socket or file ({fn}): find the peer that "
                "does not answer (ss -tnp on the host shows the connection).")
    if cls == LOCK_WAIT:
        return (f"{who.capitalize()} wait{v} on a lock or another thread ({fn}): the holder is "
                "in the other threads of the same dump (py-spy dump shows every thread).")
    return (f"{who.capitalize()} sit{v} in {fn}: compare with the other ranks and the log; "
            "py-spy dump --native shows the native wait.")


def progress_note(state: RoleState) -> str:
    return {"moving": "the server progresses (counters rise): normal SPMD work, not a hang",
            "frozen": "the server's progress counters are frozen",
            "unjudged": "progress cannot be judged (no two /metrics samples with counters)"}[state]
