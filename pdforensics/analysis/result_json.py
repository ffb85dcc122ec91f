"""The analysis result at the edge: `Analysis` <-> JSON (analysis.json, `--json`).

Inside the tool the result is always the typed `Analysis`; JSON exists only where it is
written or read. Reading validates every field, because a bundle may come from anyone: a
malformed analysis.json is a BundleError naming the field, never a traceback.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, cast

from pdforensics.analysis.findings import (
    RULES,
    SEVERITY_ORDER,
    VERDICTS,
    Analysis,
    Evidence,
    EvidenceWindow,
    Finding,
    Severity,
    Since,
    Skipped,
    Verdict,
)
from pdforensics.analysis.pdpath.codec import diagnosis_from_json, diagnosis_json
from pdforensics.errors import BundleError

ANALYSIS_FILE = "analysis.json"


def _evidence_json(e: Evidence | str) -> dict[str, Any]:
    if isinstance(e, Evidence):
        return {"host": e.host, "source": e.source, "text": e.text, "path": e.path,
                "line": str(e)}
    return {"host": None, "source": None, "text": e, "path": None, "line": e}


def analysis_json(a: Analysis) -> dict[str, Any]:
    """The JSON document of an analysis (analysis.json and `analyze --json`)."""
    return {
        "verdict": a.verdict,
        "summary": a.summary,
        "missing": list(a.missing),
        "findings": [
            {"key": f.key, "severity": f.severity, "title": f.title,
             "evidence": [_evidence_json(e) for e in f.evidence], "next_step": f.next_step,
             "section": f.section, "wedge": f.wedge, "rank": f.rank,
             "merged": list(f.merged), "subject": f.subject, "since": f.since,
             "outage": f.outage, "side": f.side,
             "suspect": f.suspect}
            for f in a.findings
        ],
        "skipped": [{"rule": s.rule, "reason": s.reason} for s in a.skipped],
        "rules": sorted(RULES),
        "diagnosis": diagnosis_json(a.diagnosis) if a.diagnosis is not None else None,
        "since": {"at": a.since.at, "utc": _utc(a.since.at), "evidence": a.since.evidence}
        if a.since is not None else None,
        "mitigate": a.mitigate,
        "diagnose": a.diagnose,
        "window": {"start": a.window.start, "utc": _utc(a.window.start), "how": a.window.how,
                   "history": list(a.window.history)} if a.window is not None else None,
    }


def _utc(epoch: float | None) -> str | None:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)) if epoch is not None else None


def _number(doc: dict[str, Any], key: str, where: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if type(value) not in (int, float) or value != value or abs(value) > 1e11:
        raise BundleError(f"{where}: '{key}' must be a time in epoch seconds")
    return float(value)


def _since(doc: Any, where: str) -> Since | None:
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise BundleError(f"{where}: 'since' must be an object")
    at = _number(doc, "at", f"{where} since")
    if at is None:
        raise BundleError(f"{where}: 'since' needs 'at'")
    return Since(at, _str(doc, "evidence", f"{where} since"))


def _window(doc: Any, where: str) -> EvidenceWindow | None:
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise BundleError(f"{where}: 'window' must be an object")
    history = tuple(_list(doc, "history", f"{where} window"))
    if not all(isinstance(h, str) for h in history):
        raise BundleError(f"{where}: 'window.history' must hold strings")
    return EvidenceWindow(_number(doc, "start", f"{where} window"),
                          _str(doc, "how", f"{where} window"), history)


def _str(doc: dict[str, Any], key: str, where: str, optional: bool = False) -> Any:
    value = doc.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise BundleError(f"{where}: '{key}' must be a string, not {type(value).__name__}")
    return value


def _list(doc: dict[str, Any], key: str, where: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise BundleError(f"{where}: '{key}' must be a list, not {type(value).__name__}")
    return value


def _evidence(item: Any, where: str) -> Evidence | str:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise BundleError(f"{where}: evidence must be an object or a string")
    host = _str(item, "host", where, optional=True)
    source = _str(item, "source", where, optional=True)
    text: str = _str(item, "text", where)
    if host is None and source is None and item.get("path") is None:
        return text
    return Evidence(host or "", source or "", text, _str(item, "path", where, optional=True))


def _finding(item: Any, where: str) -> Finding:
    if not isinstance(item, dict):
        raise BundleError(f"{where}: a finding must be an object")
    severity = _str(item, "severity", where)
    if severity not in SEVERITY_ORDER:
        raise BundleError(f"{where}: unknown severity {severity[:40]!r}")
    sev = cast(Severity, severity)  # checked just above
    wedge, rank, outage = item.get("wedge", False), item.get("rank"), item.get("outage", False)
    if not isinstance(wedge, bool) or not isinstance(outage, bool):
        raise BundleError(f"{where}: 'wedge' and 'outage' must be true or false")
    if rank is not None and (type(rank) is not int or abs(rank) > 10**6):
        raise BundleError(f"{where}: 'rank' must be a small integer")
    evidence = tuple(_evidence(e, f"{where} evidence {i}")
                     for i, e in enumerate(_list(item, "evidence", where)))
    merged = tuple(_list(item, "merged", where))
    if not all(isinstance(k, str) for k in merged):
        raise BundleError(f"{where}: 'merged' must hold strings")
    return Finding(key=_str(item, "key", where), severity=sev, title=_str(item, "title", where),
                   evidence=evidence, next_step=_str(item, "next_step", where, optional=True) or "",
                   section=_str(item, "section", where, optional=True), wedge=wedge, rank=rank,
                   merged=merged, subject=_str(item, "subject", where, optional=True),
                   since=_number(item, "since", where), outage=outage,
                   side=_str(item, "side", where, optional=True),
                   suspect=_str(item, "suspect", where, optional=True))


def _skipped(item: Any, where: str) -> Skipped:
    if not isinstance(item, dict):
        raise BundleError(f"{where}: a skipped rule must be an object")
    return Skipped(_str(item, "rule", where), _str(item, "reason", where))


def analysis_from_json(doc: Any, where: str = ANALYSIS_FILE) -> Analysis:
    """The typed analysis of a JSON document; BundleError naming the first bad field."""
    if not isinstance(doc, dict):
        raise BundleError(f"{where}: not a JSON object")
    verdict = _str(doc, "verdict", where)
    if verdict not in VERDICTS:
        raise BundleError(f"{where}: unknown verdict {verdict[:40]!r}")
    findings = tuple(_finding(f, f"{where} finding {i}")
                     for i, f in enumerate(_list(doc, "findings", where)))
    skipped = tuple(_skipped(s, f"{where} skipped {i}")
                    for i, s in enumerate(_list(doc, "skipped", where)))
    missing = tuple(_list(doc, "missing", where))
    if not all(isinstance(m, str) for m in missing):
        raise BundleError(f"{where}: 'missing' must hold strings")
    diag = doc.get("diagnosis")
    diagnosis = (diagnosis_from_json(diag, f"{where} diagnosis")
                 if isinstance(diag, dict) else None)
    return Analysis(cast(Verdict, verdict), findings, skipped,
                    _str(doc, "summary", where, optional=True) or "", missing, diagnosis,
                    _since(doc.get("since"), where), _window(doc.get("window"), where),
                    _str(doc, "mitigate", where, optional=True),
                    _str(doc, "diagnose", where, optional=True))


def write_analysis(bundle: Path, analysis: Analysis) -> Path:
    """Write BUNDLE/analysis.json atomically; returns its path."""
    target = Path(bundle) / ANALYSIS_FILE
    fd, tmp = tempfile.mkstemp(dir=str(target.parent), prefix=".analysis.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(analysis_json(analysis), fh, indent=1, sort_keys=True)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_analysis(bundle: Path) -> Analysis | None:
    """BUNDLE/analysis.json as an Analysis; None when there is none, BundleError when it is
    refused (a link, a special file, too big), not JSON, or of the wrong shape."""
    from pdforensics.bundle.schema import validate_analysis
    from pdforensics.untrusted.read import read_json_inside

    where = f"{Path(bundle).name}/{ANALYSIS_FILE}"
    doc = read_json_inside(Path(bundle), ANALYSIS_FILE, where)
    if doc is None:
        return None
    return analysis_from_json(validate_analysis(doc, where), where)
