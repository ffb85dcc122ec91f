"""Findings, skipped rules and the analysis result; the explicit rule registry."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Literal

from pdforensics.analysis.pdpath.model import Diagnosis

if TYPE_CHECKING:
    from pdforensics.analysis.rules.context import Context

Severity = Literal["critical", "warning", "info"]
Verdict = Literal["OUTAGE", "WEDGED", "DEGRADED", "HEALTHY", "UNKNOWN"]
#: every verdict, worst first. OUTAGE: the router has no worker left for a role it needs,
#: so every request fails at once; WEDGED: requests accepted and not served
VERDICTS: tuple[Verdict, ...] = ("OUTAGE", "WEDGED", "DEGRADED", "HEALTHY", "UNKNOWN")

SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Evidence:
    """One fact behind a finding: where it was seen and what it said."""

    host: str
    source: str  # "/metrics", "/server_info", "py-spy", "ps", "log", ...
    text: str
    path: str | None = None  # raw file relative to the bundle, for the report to link

    def __str__(self) -> str:
        where = " ".join(x for x in (self.host, self.source) if x)
        return f"{where}: {self.text}" if where else self.text


@dataclass(frozen=True)
class Finding:
    """What a rule concluded, with the evidence and the next thing to do.

    ``wedge`` marks a critical finding that rests on evidence across time (frozen counters
    over >= 2 samples, a dead rank with frozen progress, ...): only such findings make the
    verdict WEDGED. ``rank`` overrides the rule's sort rank when one finding is more (or
    less) specific than its rule usually is. ``merged`` lists the keys of findings that the
    merge pass (analysis/merge.py) folded into this one: the same symptom seen other ways.
    ``subject`` names what the finding is about (a service label) where a rule knows it.
    ``since`` is when its own evidence shows the trouble began (epoch, our clock), where the
    rule reads a time; ``outage`` marks a critical finding that every request fails (no
    worker left for a role): it makes the verdict OUTAGE.
    """

    key: str
    severity: Severity
    title: str
    evidence: tuple[Evidence | str, ...]
    next_step: str
    section: str | None = None
    wedge: bool = False
    rank: int | None = None
    merged: tuple[str, ...] = ()
    subject: str | None = None
    since: float | None = None
    outage: bool = False
    side: str | None = None  # for the diagnosis: the side it points at (collective, gpu, ...)
    suspect: str | None = None  # and what it names there (the rank behind, a device), if any


@dataclass(frozen=True)
class Skipped:
    """A rule that did not run, and why (its inputs were missing, or it crashed)."""

    rule: str
    reason: str


@dataclass(frozen=True)
class Since:
    """Since when the verdict holds, from the evidence of the findings that set it."""

    at: float  # epoch seconds, the capturing machine's clock
    evidence: str  # what says so ("DECODE_TRANSFER_FAILED in decode-0 decode:30001 log")


@dataclass(frozen=True)
class EvidenceWindow:
    """Where the evidence window started (views/window.py) and what lies before it."""

    start: float | None  # the earliest start over the services; None: no timed evidence
    how: str  # --since | server start | look-back 10 min
    history: tuple[str, ...] = ()  # one line per signature, transition or Xid before it


@dataclass(frozen=True)
class Analysis:
    verdict: Verdict
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    summary: str
    missing: tuple[str, ...]
    diagnosis: Diagnosis | None = None  # the reading of the evidence (analysis/pdpath)
    since: Since | None = None
    window: EvidenceWindow | None = None
    mitigate: str | None = None  # the first screen: what restores service now
    diagnose: str | None = None  # ... and where the cause is (analysis/headline.py)


class SkipRule(Exception):
    """Raised by a rule whose inputs turn out to be missing; the message is the reason."""


RuleFn = Callable[["Context"], Iterable[Finding]]


class Need(str, Enum):
    """An input a rule needs from the capture. Each has its check and its reason in
    rules/context.py (NEEDS); ``@rule(needs=...)`` takes only these, so a misspelt need fails
    at import instead of being silently ignored."""

    SERVERS = "servers"
    METRICS = "metrics"
    SAMPLES2 = "samples2"
    PD = "pd"
    PROCESSES = "processes"
    STACKS = "stacks"
    GPUS = "gpus"
    LOGS = "logs"
    SERVER_INFO = "server_info"
    PROBES = "probes"
    CLOCK = "clock"
    CLIENT_DUMPS = "client_dumps"
    ROUTER = "router"
    ROW_REMAP = "row_remap"
    NVLINK = "nvlink"
    KERNEL_LOG = "kernel_log"
    BENEATH = "beneath"  # a server log, Flight Recorder dump or RAS report (NCCL, transfer engine)
    CUDA = "cuda"  # a cuda-gdb listing (capture --deep)


@dataclass(frozen=True)
class Rule:
    key: str
    fn: RuleFn
    needs: tuple[Need, ...]
    rank: int
    description: str


#: The registry, in registration order. Rules register with @rule at import of
#: pdforensics.analysis.rules (which imports every rule module explicitly).
RULES: dict[str, Rule] = {}


def rule(key: str, needs: Iterable[Need] = (), rank: int = 100) -> Callable[[RuleFn], RuleFn]:
    """Register a rule. ``needs`` are inputs the engine checks first (see rules.context);
    a name that is not a ``Need`` raises here, at import."""
    checked = tuple(Need(n) for n in needs)  # ValueError: not a known need

    def deco(fn: RuleFn) -> RuleFn:
        if key in RULES and RULES[key].fn is not fn:
            raise ValueError(f"rule {key} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()
        RULES[key] = Rule(key, fn, checked, rank, doc[0] if doc else "")
        return fn

    return deco


def sort_key(f: Finding) -> tuple[int, int, str]:
    base = RULES[f.key].rank if f.key in RULES else 100
    return (SEVERITY_ORDER.get(f.severity, 3), f.rank if f.rank is not None else base, f.key)
