"""`pdforensics triage FILE...`: read loose files, run every rule that can run, say why not."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pdforensics.analysis.engine import analysis_json, analyze_context
from pdforensics.analysis.findings import Analysis
from pdforensics.analysis.pdpath.codec import diagnosis_json
from pdforensics.analysis.pdpath.diagnose import diagnose_evidence
from pdforensics.analysis.pdpath.model import Diagnosis
from pdforensics.analysis.pdpath.sources import Source
from pdforensics.analysis.rules.context import ClientDump, Context
from pdforensics.errors import ExitStatus
from pdforensics.terminal import Line, plain
from pdforensics.triage.read import Artifact, read_paths
from pdforensics.triage.sources import triage_sources
from pdforensics.triage.view import build_capture, newest_time
from pdforensics.views.window import Since, window_text


@dataclass(frozen=True)
class TriageResult:
    """Every file with its kind or error, the notes on how they were combined, the analysis."""

    artifacts: tuple[Artifact, ...]
    notes: tuple[str, ...]
    analysis: Analysis | None  # None when no file could be read
    diagnosis: Diagnosis | None = None  # the reading, even of files no rule could read

    @property
    def exit_code(self) -> int:
        if not any(a.usable for a in self.artifacts):
            return ExitStatus.ERROR
        return ExitStatus.PARTIAL if any(not a.usable for a in self.artifacts) else ExitStatus.OK


def triage_artifacts(artifacts: Sequence[Artifact], since: Since | None = None) -> TriageResult:
    """Analyse what was read: goroutine dumps go beside the rest as client dumps. ``since``
    (a duration is counted back from the newest time the files state) makes older log lines
    history."""
    arts = tuple(artifacts)
    start = since.at(newest_time(arts) or time.time()) if since is not None else None
    sources = [_windowed(s, start) for s in triage_sources(arts)]
    if not any(a.usable for a in arts):
        text = any(a.text.strip() or a.data for a in arts)
        return TriageResult(arts, (), None, diagnose_evidence(sources) if text else None)
    capture, notes = build_capture(arts, start)
    clients = tuple(ClientDump(a.path, a.goroutines) for a in arts
                    if a.usable and a.kind == "goroutines")
    analysis = analyze_context(Context(capture, clients), sources)
    return TriageResult(arts, notes, analysis, analysis.diagnosis)


def _windowed(src: Source, start: float | None) -> Source:
    """A log's lines stamped before ``start`` blanked (line numbers kept), as the rules judge
    it: the diagnosis reads the same window (a stack dump or a scrape keeps its text)."""
    if start is None or not src.text or src.kind not in ("log", None):
        return src
    return replace(src, text=window_text(src.text, start))


def triage_paths(paths: Sequence[str], since: Since | None = None) -> TriageResult:
    """Read every file (``-`` is stdin) and analyse the readable ones together."""
    return triage_artifacts([a for p in paths for a in read_paths(p)], since)


def _describe(a: Artifact) -> str:
    text = _what(a)
    holds = [k for k in a.beneath_kinds if k != a.kind]
    return text + (f"; holds {', '.join(k.replace('_', ' ') for k in holds)} evidence"
                   if holds and a.usable else "")


def _what(a: Artifact) -> str:
    if not a.usable:
        return "skipped"
    if a.kind == "stacks":
        return f"{a.threads} threads in {len([d for d in a.dumps if not d.error])} dumps"
    if a.kind == "goroutines":
        return f"{sum(g.count for g in a.goroutines)} goroutines (client dump)"
    if a.kind == "metrics":
        return f"{len(a.scrapes)} scrape(s), {sum(len(s.snapshot) for s in a.scrapes)} samples"
    if a.kind == "log":
        extra = f", {a.beneath.lines} NCCL/kernel/transfer records" if a.beneath else ""
        unread = f"; its stack dumps not read: {a.unread_stacks}" if a.unread_stacks else ""
        return f"{a.result_size} lines, {len(a.log_hits)} signatures{extra}{unread}"
    if a.kind == "server_info":
        return f"{a.result_size} keys"
    if a.kind == "flight_recorder":
        d = a.fr_dump
        if d is not None:
            rank = f"rank {d.rank}" if d.rank is not None else "rank unknown"
            return f"Flight Recorder dump, {rank}, {len(d.entries)} entries, {len(d.pending())} pending"
        return f"Flight Recorder analyzer report, {a.result_size} collective(s)"
    if a.kind == "pyspy_top":
        t = a.top
        return (f"py-spy top, {len(t.rows)} functions, Active {t.active_pct}%" if t is not None
                else "py-spy top")
    if a.kind == "load":
        return f"{a.load.kind} document" if a.load is not None else "load document"
    f = a.pyspy_failure
    return f"py-spy failed ({f.reason})" if f is not None else "py-spy failed"


def triage_json(r: TriageResult) -> dict[str, Any]:
    """``{"files": [{"path", "kind", "error"}], "verdict", "findings", ...}``; findings as in
    ``analyze --json``."""
    doc: dict[str, Any] = {
        "files": [{"path": a.path, "kind": a.kind, "error": a.error, "read": _describe(a)}
                  for a in r.artifacts],
        "notes": list(r.notes),
    }
    if r.analysis is None:
        doc.update({"verdict": None, "findings": [], "summary": "no file could be read",
                    "missing": [], "skipped": [],
                    "diagnosis": diagnosis_json(r.diagnosis) if r.diagnosis else None})
        return doc
    doc.update(analysis_json(r.analysis))
    return doc


def triage_lines(r: TriageResult, verbose: bool = False) -> list[Line]:
    """The files and their kinds, then the analysis as `analyze` prints it."""
    from pdforensics.analysis.text_out import analysis_lines

    lines: list[Line] = [("Files:",)]
    for a in r.artifacts:
        what = f"{a.kind}: {_describe(a)}" if a.usable else f"{a.kind or '?'}, skipped: {a.error}"
        lines.append((f"  {a.path}: {what}",))
    lines += [(f"  note: {n}",) for n in r.notes]
    lines.append(())
    if r.analysis is None:
        lines.append(("No file could be read by the rules: nothing to analyse.",))
        if r.diagnosis is not None and r.diagnosis.clues:
            from pdforensics.analysis.pdpath.render import diagnosis_text
            from pdforensics.terminal import field

            lines.append(())
            lines += [(t,) for t in diagnosis_text(r.diagnosis, field)]
        return lines
    return lines + analysis_lines(r.analysis, verbose)


def format_triage_text(r: TriageResult, verbose: bool = True) -> str:
    """triage_lines as plain text."""
    return plain(triage_lines(r, verbose))
