"""The PD request path and the evidence placed on it.

A request of an SGLang prefill-decode deployment goes through eight stages (``STAGES``, in
order) on three roles (router, prefill, decode) over the hosts and ranks that run them. Every
piece of evidence a reader finds (a log line, a metric delta, a stack bucket, a probe, a
router event, a request line, a client dump) becomes a `Clue`: where it sits on the path
(stage, side, role, host, rank), when, which request (rid, bootstrap room), and a `Label`:

- ``cause``: an upstream failure (a refused connection, an exception, a rank behind);
- ``consequence``: what follows from one ("from another rank", "Aborted by AbortReq",
  a router relaying a worker's 500, a watchdog victim);
- ``progress``: work that moves (batch lines, a rising counter, an active forward thread);
- ``noise``: true but beside the point (startup chatter, an idle thread), kept for context.

The reasoning pass (`reason.diagnose`) turns the clues into one `Diagnosis`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Stage = Literal[
    "router_dispatch", "prefill_bootstrap", "prefill_forward", "kv_send", "decode_prealloc",
    "decode_transfer_wait", "decode_forward", "stream_back", "startup", "not_applicable",
    "not_established",
]
Side = Literal["router", "prefill", "decode", "transfer_engine", "collective", "gpu", "host",
               "client", "not_established"]
Label = Literal["cause", "consequence", "progress", "noise"]
Confidence = Literal["high", "medium", "low"]

#: The request path, in the order a request travels it.
STAGES: tuple[Stage, ...] = (
    "router_dispatch", "prefill_bootstrap", "prefill_forward", "kv_send", "decode_prealloc",
    "decode_transfer_wait", "decode_forward", "stream_back",
)
#: The role each stage runs on (kv_send: prefill pushes; the transfer engine carries it).
STAGE_ROLE: dict[str, str] = {
    "router_dispatch": "router", "prefill_bootstrap": "prefill", "prefill_forward": "prefill",
    "kv_send": "prefill", "decode_prealloc": "decode", "decode_transfer_wait": "decode",
    "decode_forward": "decode", "stream_back": "router",
}
SIDES: tuple[str, ...] = ("router", "prefill", "decode", "transfer_engine", "collective", "gpu",
                          "host", "client")
NOT_ESTABLISHED: Literal["not_established"] = "not_established"


@dataclass(frozen=True)
class Clue:
    """One piece of evidence placed on the request path.

    ``key`` is stable (a log signature key such as ``KV_WAITING_TIMEOUT``, or a reader's own
    such as ``NCCL_WATCHDOG_TIMEOUT``); ``text`` quotes the evidence (the log line as found,
    or a one-line summary of a metric delta or a stack bucket); ``source`` + ``line`` point
    at it (a loose file path, or ``raw/<host>/<file>`` of a bundle). ``role`` is the role of
    whatever wrote it (prefill, decode, router, unified); ``side`` the component the clue is
    about (for a cause: where to look). ``suspect`` is what this clue, if it is the upstream
    cause, names to look at ("TP3", "rank 5", "10.0.0.1:8998", "goroutine 27").
    ``wedge``: True when the clue shows requests stuck, False when it shows a clear
    non-wedge (a crash, an error returned, work finishing), None when it says neither.
    ``strength``: 3 decisive (the message says what failed), 2 telling, 1 weak.
    ``why``: where the label comes from (SGLang's source ``file:line sink``, or the rule).
    """

    key: str
    label: Label
    text: str
    source: str = ""
    line: int | None = None
    time: float | None = None
    stage: Stage | None = None
    side: Side | None = None
    role: str | None = None
    host: str | None = None
    rank: str | None = None
    rids: tuple[str, ...] = ()
    rooms: tuple[int, ...] = ()
    suspect: str | None = None
    wedge: bool | None = None
    strength: int = 1
    why: str = ""

    def where(self) -> str:
        """``source:line`` (or just the source) for a reader to open."""
        if self.line is not None:
            return f"{self.source}:{self.line}"
        return self.source


@dataclass(frozen=True)
class Link:
    """One step of the cause -> consequence chain: clue indexes into `Diagnosis.clues`."""

    cause: int
    consequence: int
    why: str  # what joins them: the same rid, room, rank, host, or time order


@dataclass(frozen=True)
class Claim:
    """One sentence of the reading with the clues (indexes into `Diagnosis.clues`) behind it."""

    text: str
    clues: tuple[int, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    """What the evidence says, and how sure: the stage requests stop in, the side (and the
    suspect rank, thread, host) to look at first, the cause -> consequence chain, whether
    requests are wedged, and "not_established" wherever the evidence does not decide.

    ``root_cause`` stays ``not_established`` unless a clue states one outright; the tool
    never invents it. ``decide`` names what would tell two readings apart; ``next_checks``
    what to look at next. ``clues`` are every piece of evidence placed on the path, in time
    order where times are known; the other fields point into it.
    """

    stage: Stage
    side: Side
    suspect: str | None
    wedge: bool | None
    root_cause: str
    confidence: Confidence
    headline: str
    claims: tuple[Claim, ...]
    chain: tuple[Link, ...]
    decide: tuple[str, ...]
    next_checks: tuple[str, ...]
    clues: tuple[Clue, ...]
    notes: tuple[str, ...] = ()  # what could not be read (a reader that failed on a source)

    def labelled(self, label: Label) -> tuple[Clue, ...]:
        return tuple(c for c in self.clues if c.label == label)

    @property
    def causes(self) -> tuple[Clue, ...]:
        return self.labelled("cause")

    @property
    def consequences(self) -> tuple[Clue, ...]:
        return self.labelled("consequence")
