"""The verdict banner: the analysis's findings with their evidence and links into the bundle."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.analysis.findings import SEVERITY_ORDER, Analysis, Evidence, Finding
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.report.common import SECTIONS, dur, href, utc
from pdforensics.views.loaded import LoadedCapture

#: findings shown in the banner; the rest fold below it
TOP = 3
_SECTION_IDS = {sid for sid, _t in SECTIONS}
#: a rule's own section name (Finding.section) -> the report section that shows its evidence
RULE_SECTIONS = {
    "progress": "metrics", "pd_queues": "metrics", "kv_cache": "metrics", "scheduler": "topology",
    "processes": "topology", "client": "topology", "restarts": "timeline", "logs": "timeline",
    "ranks": "stacks", "stacks": "stacks", "gpu": "gpus", "config": "config", "diff": "changes",
}
# evidence source -> section, for findings that name no section
_SOURCE_SECTION = (
    ("metrics", "metrics"), ("py-spy", "stacks"), ("pyspy", "stacks"), ("nvidia", "gpus"),
    ("gpu", "gpus"), ("xid", "gpus"), ("log", "timeline"), ("journal", "timeline"),
    ("cmdline", "config"), ("environ", "config"), ("server_info", "topology"),
)


@dataclass(frozen=True)
class EvidenceView:
    text: str
    where: str = ""  # "host source"
    href: str | None = None  # link to the raw file inside the bundle


@dataclass(frozen=True)
class FindingView:
    key: str
    severity: str
    title: str
    evidence: tuple[EvidenceView, ...]
    next_step: str | None
    section: str
    section_title: str
    merged: tuple[str, ...] = ()  # keys folded into this finding by the merge pass


@dataclass(frozen=True)
class DiagnosisView:
    """The reading, first on the page: each claim and chain step links to its evidence."""

    headline: str
    confidence: str
    facts: tuple[tuple[str, str], ...]  # (stage, ...), (side, ...), (suspect, ...), ...
    claims: tuple[tuple[str, tuple[EvidenceView, ...]], ...]
    chain: tuple[tuple[EvidenceView, EvidenceView, str], ...]
    decide: tuple[str, ...]
    next_checks: tuple[str, ...]


@dataclass(frozen=True)
class VerdictView:
    verdict: str
    cluster: str
    started: str
    duration: str
    status: str  # complete | partial | ...
    partial_reasons: tuple[str, ...]
    findings: tuple[FindingView, ...]
    top: tuple[FindingView, ...]
    summary: str | None
    skipped: tuple[str, ...]
    analysis_note: str | None  # why there is no analysis, when there is none
    hosts: int
    services: int
    parse_errors: tuple[str, ...]
    diagnosis: DiagnosisView | None = None


def _evidence(item: Evidence | str, prefix: str) -> EvidenceView:
    if isinstance(item, Evidence):
        where = " ".join(x for x in (item.host, item.source) if x)
        return EvidenceView(text=item.text, where=where, href=href(prefix, item.path or None))
    return EvidenceView(text=item)


def _section_for(f: Finding, evidence: tuple[EvidenceView, ...]) -> str:
    given = f.section
    if given in RULE_SECTIONS:
        return RULE_SECTIONS[given]
    if given in _SECTION_IDS:
        return given
    hay = " ".join([f.key] + [e.where for e in evidence]).lower()
    for needle, sid in _SOURCE_SECTION:
        if needle in hay:
            return sid
    return "topology"


def _clue_view(c: Clue, prefix: str) -> EvidenceView:
    path, _, line = c.where().rpartition(":") if c.line is not None else (c.source, "", "")
    link = href(prefix, path) if path.startswith("raw/") else None
    who = " ".join(x for x in (c.host, c.role, c.rank) if x)
    return EvidenceView(text=f"{c.key}: {c.text}", where=f"{who} {c.where()}".strip(),
                        href=link)


def diagnosis_of(analysis: Analysis | None, prefix: str = "") -> DiagnosisView | None:
    """The diagnosis as the banner shows it (None without one)."""
    d = analysis.diagnosis if analysis is not None else None
    if d is None:
        return None
    from pdforensics.analysis.pdpath.render import WEDGE_WORDS, value_or_open

    facts = (("stage", value_or_open(d.stage)), ("side", value_or_open(d.side)), ("suspect", value_or_open(d.suspect)),
             ("wedge", WEDGE_WORDS[d.wedge]), ("root cause", value_or_open(d.root_cause)))
    claims = tuple((c.text, tuple(_clue_view(d.clues[i], prefix) for i in c.clues[:3]))
                   for c in d.claims)
    chain = tuple((_clue_view(d.clues[x.cause], prefix), _clue_view(d.clues[x.consequence], prefix),
                   x.why) for x in d.chain[:8])
    return DiagnosisView(d.headline, d.confidence, facts, claims, chain, d.decide,
                         d.next_checks)


def findings_of(analysis: Analysis | None, prefix: str = "") -> tuple[FindingView, ...]:
    """Findings sorted by severity (most severe first), keeping the engine's order within."""
    titles = dict(SECTIONS)
    out = []
    for f in analysis.findings if analysis is not None else ():
        ev = tuple(_evidence(e, prefix) for e in f.evidence)
        sid = _section_for(f, ev)
        out.append(FindingView(key=f.key, severity=f.severity, title=f.title or f.key, evidence=ev,
                               next_step=f.next_step or None, section=sid,
                               section_title=titles[sid], merged=f.merged))
    return tuple(sorted(out, key=lambda x: SEVERITY_ORDER.get(x.severity, 5)))


def build_verdict(capture: LoadedCapture, analysis: Analysis | None, note: str | None,
                  prefix: str = "") -> tuple[VerdictView, list[str]]:
    """The banner: verdict, capture facts, findings most severe first with linked evidence."""
    verdict = analysis.verdict if analysis is not None else "UNKNOWN"
    findings = findings_of(analysis, prefix)
    summary = analysis.summary if analysis is not None else None
    missing = list(analysis.missing) if analysis is not None else []
    view = VerdictView(
        verdict=verdict, cluster=capture.cluster or "(unnamed cluster)",
        started=utc(capture.started_at), duration=dur(capture.duration_s),
        status=capture.status, partial_reasons=capture.partial_reasons, findings=findings,
        top=findings[:TOP], summary=summary or None,
        skipped=tuple(f"{s.rule}: {s.reason}" for s in analysis.skipped) if analysis else (),
        analysis_note=note if analysis is None else None,
        hosts=len(capture.hosts), services=sum(1 for _ in capture.services()),
        parse_errors=capture.parse_errors, diagnosis=diagnosis_of(analysis, prefix),
    )
    return view, missing
