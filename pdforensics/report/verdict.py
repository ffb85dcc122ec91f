"""The verdict banner: the analysis dict normalised into findings with evidence and links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdforensics.loaded import LoadedCapture
from pdforensics.report.common import SECTIONS, dur, href, utc

#: findings shown in the banner; the rest fold below it
TOP = 3
VERDICTS = ("WEDGED", "DEGRADED", "HEALTHY", "UNKNOWN")
_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
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


def _evidence(item: Any, prefix: str) -> EvidenceView:
    if isinstance(item, dict):
        where = " ".join(str(item[k]) for k in ("host", "source") if item.get(k))
        return EvidenceView(text=str(item.get("text", "")), where=where,
                            href=href(prefix, _opt(item.get("path"))))
    return EvidenceView(text=str(item))


def _opt(v: Any) -> str | None:
    return None if v is None or v == "" else str(v)


def _section_for(f: dict[str, Any], evidence: tuple[EvidenceView, ...]) -> str:
    given = f.get("section")
    if isinstance(given, str) and given in RULE_SECTIONS:
        return RULE_SECTIONS[given]
    if isinstance(given, str) and given in _SECTION_IDS:
        return given
    hay = " ".join([str(f.get("key", ""))] + [e.where for e in evidence]).lower()
    for needle, sid in _SOURCE_SECTION:
        if needle in hay:
            return sid
    return "topology"


def _skipped(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, dict):
        return tuple(f"{k}: {v}" for k, v in raw.items())
    if isinstance(raw, list | tuple):
        out = []
        for r in raw:
            if isinstance(r, dict):
                out.append(": ".join(str(v) for v in r.values()))
            else:
                out.append(str(r))
        return tuple(out)
    return ()


def findings_of(analysis: dict[str, Any] | None, prefix: str = "") -> tuple[FindingView, ...]:
    """Findings sorted by severity (most severe first), keeping the engine's order within."""
    titles = dict(SECTIONS)
    out = []
    raw = (analysis or {}).get("findings") or []
    for f in raw if isinstance(raw, list) else []:
        if not isinstance(f, dict):
            continue
        ev_raw = f.get("evidence") or []
        ev = tuple(_evidence(e, prefix) for e in (ev_raw if isinstance(ev_raw, list | tuple) else [ev_raw]))
        sid = _section_for(f, ev)
        out.append(FindingView(
            key=str(f.get("key", "")), severity=str(f.get("severity", "info")).lower(),
            title=str(f.get("title", f.get("key", ""))), evidence=ev,
            next_step=_opt(f.get("next_step")), section=sid, section_title=titles[sid]))
    return tuple(sorted(out, key=lambda x: _SEVERITY_ORDER.get(x.severity, 5)))


def build_verdict(capture: LoadedCapture, analysis: dict[str, Any] | None, note: str | None,
                  prefix: str = "") -> tuple[VerdictView, list[str]]:
    """The banner: verdict, capture facts, findings most severe first with linked evidence."""
    verdict = str((analysis or {}).get("verdict") or "UNKNOWN").upper()
    if verdict not in VERDICTS:
        verdict = "UNKNOWN"
    findings = findings_of(analysis, prefix)
    summary = (analysis or {}).get("summary")
    missing = list(_skipped((analysis or {}).get("missing")))
    view = VerdictView(
        verdict=verdict, cluster=capture.cluster or "(unnamed cluster)",
        started=utc(capture.started_at), duration=dur(capture.duration_s),
        status=capture.status, partial_reasons=capture.partial_reasons, findings=findings,
        top=findings[:TOP], summary=str(summary) if summary else None,
        skipped=_skipped((analysis or {}).get("skipped")),
        analysis_note=note if analysis is None else None,
        hosts=len(capture.hosts), services=sum(1 for _ in capture.services()),
        parse_errors=capture.parse_errors,
    )
    return view, missing
