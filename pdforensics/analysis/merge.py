"""The merge pass: one symptom seen several ways becomes one finding, its cause first.

The PD queue rules look at one KV hop from four sides: a decode transfer queue that never
drains, a decode prealloc queue behind it, the prefill inflight queue whose sends never
complete, the prefill bootstrap queue. When several of them fire as critical they describe
one frozen hop, so they are folded into the most specific one (the lowest rank): it keeps
its key, takes every piece of evidence, and lists the keys it absorbed in ``merged``.

With the hop as one finding, the stack finding that corroborates it (every decode rank
stuck in the KV receiver: ALL_RANKS_STUCK, rank 32) comes right after it, in the top three
of the report, instead of under "N more" behind the hop's other queues.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pdforensics import linear
from pdforensics.analysis.findings import Evidence, Finding, sort_key

#: the PD queue rules, with the short name of their queue
QUEUE_KEYS: dict[str, str] = {
    "DECODE_TRANSFER_STUCK": "transfer queue",
    "DECODE_PREALLOC_STUCK": "prealloc queue",
    "PREFILL_BOOTSTRAP_STUCK": "bootstrap queue",
    "PREFILL_INFLIGHT_STUCK": "inflight queue",
}

_COUNT = linear.compile(r" has (\S+) requests")
_SPAN = linear.compile(r" for (\d+(?:\.\d+)?) s\b")


def _frozen_queue(f: Finding) -> bool:
    return f.key in QUEUE_KEYS and f.severity == "critical"


def _headline(group: Sequence[Finding]) -> str:
    """`KV hop frozen ...: decode-0 decode:2 transfer queue 14, prealloc queue 3; ...`."""
    by_subject: dict[str, list[str]] = {}
    for f in group:
        m = _COUNT.search(f.title)
        count = f" {m.group(1)}" if m else ""
        by_subject.setdefault(f.subject or "?", []).append(f"{QUEUE_KEYS[f.key]}{count}")
    spans = [float(m.group(1)) for f in group if (m := _SPAN.search(f.title))]
    span = f" for {min(spans):.1f} s" if spans else ""
    parts = "; ".join(f"{subject} {', '.join(queues)}" for subject, queues in by_subject.items())
    return f"KV hop frozen, no progress{span}: {parts}"


def merge_queue_findings(findings: Sequence[Finding]) -> list[Finding]:
    """Fold the critical PD queue findings into the most specific one (see the module doc)."""
    group = sorted((f for f in findings if _frozen_queue(f)), key=sort_key)
    if len(group) < 2:
        return list(findings)
    top = group[0]
    evidence: list[Evidence | str] = []
    # each queue's own line first (what is frozen where), then the rest of the evidence
    for e in [f.evidence[0] for f in group if f.evidence] + [e for f in group
                                                            for e in f.evidence[1:]]:
        if e not in evidence:
            evidence.append(e)
    merged_keys = tuple(f.key for f in group[1:])
    merged = replace(top, title=_headline(group), evidence=tuple(evidence),
                     merged=top.merged + merged_keys)
    out: list[Finding] = []
    for f in findings:
        if f is top:
            out.append(merged)
        elif not any(f is g for g in group):
            out.append(f)
    return out


#: finding key -> the more specific keys that absorb it when about the same service (a rank
#: outlier only when critical: an odd rank of a server that progresses explains no hang)
FOLD_INTO: dict[str, tuple[str, ...]] = {
    "SCHEDULER_PROBE_HANG": ("SCHEDULER_ENDPOINT_HANG", "RANK_OUTLIER"),
}


def fold_same_subject(findings: Sequence[Finding]) -> list[Finding]:
    """A probe hang beside /server_info's hang, or beside a rank stuck apart from its peers,
    on one server is one blocked scheduler: the more specific finding takes the probe's
    evidence and lists its key in ``merged``."""
    out: list[Finding] = list(findings)
    for f in findings:
        j = next((k for target in FOLD_INTO.get(f.key, ()) for k, g in enumerate(out)
                  if f.subject is not None and g.key == target and g.subject == f.subject
                  and (g.key != "RANK_OUTLIER" or g.severity == "critical")), None)
        if j is None:
            continue
        g = out[j]
        extra = tuple(e for e in f.evidence if e not in g.evidence)
        out[j] = replace(g, evidence=g.evidence + extra, merged=g.merged + (f.key,))
        out = [h for h in out if h is not f]
    return out


def merge_findings(findings: Sequence[Finding]) -> list[Finding]:
    """The whole pass, sorted most specific first."""
    return sorted(fold_same_subject(merge_queue_findings(findings)), key=sort_key)
