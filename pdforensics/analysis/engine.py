"""Run every registered rule over a loaded capture; decide the verdict; JSON and text out."""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence
from pathlib import Path

import pdforensics.analysis.rules  # noqa: F401  (registers the rules)
from pdforensics.analysis.findings import (
    RULES,
    Analysis,
    Finding,
    Need,
    Skipped,
    SkipRule,
    Verdict,
)
from pdforensics.analysis.pdpath.diagnose import diagnose_evidence
from pdforensics.analysis.pdpath.from_capture import capture_sources
from pdforensics.analysis.pdpath.sources import Source
from pdforensics.analysis.result_json import ANALYSIS_FILE, analysis_json, write_analysis
from pdforensics.analysis.rules.context import NEEDS, ClientDump, Context
from pdforensics.analysis.stacks_load import read_goroutines
from pdforensics.errors import ParseError
from pdforensics.views.loaded import LoadedCapture, load_capture

__all__ = ["ANALYSIS_FILE", "analysis_json", "analyze", "analyze_path", "format_analysis_text"]


def read_client_dump(path: Path) -> ClientDump:
    """Parse one --client-dump file; an unreadable one carries its error."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return ClientDump(str(path), (), f"cannot read: {exc.strerror or exc}")
    try:
        return ClientDump(str(path), read_goroutines(text))
    except ParseError as exc:
        return ClientDump(str(path), (), str(exc))


def run_rules(ctx: Context) -> tuple[list[Finding], list[Skipped]]:
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    for r in RULES.values():
        missing = [NEEDS[n][1] for n in r.needs if not _check(ctx, n)]
        if missing:
            skipped.append(Skipped(r.key, "; ".join(missing)))
            continue
        try:
            found = list(r.fn(ctx))
        except SkipRule as exc:
            skipped.append(Skipped(r.key, str(exc) or "inputs missing"))
            continue
        except Exception as exc:  # a crashing rule must never lose the analysis
            where = traceback.extract_tb(exc.__traceback__)[-1]
            skipped.append(Skipped(r.key, f"rule crashed: {type(exc).__name__}: {exc} "
                                          f"({os.path.basename(where.filename)}:{where.lineno})"))
            continue
        findings.extend(found)
    return findings, skipped


def _check(ctx: Context, need: Need) -> bool:
    try:
        return NEEDS[need][0](ctx)
    except Exception:
        return False


def missing_evidence(ctx: Context) -> list[str]:
    cap = ctx.capture
    out = [f"host {h.name} unreachable: {h.error or 'no connection'}"
           for h in cap.hosts if not h.reachable]
    from pdforensics.analysis.rules.processes import ps_failed

    for h in cap.hosts:
        if h.reachable and (why := ps_failed(ctx, h.name)):
            out.append(f"process table of {h.name} (ps failed: {why}): its server processes "
                       "were not checked")
    if not ctx.servers():
        out.append("no SGLang server found in the capture")
    for svc in ctx.servers():
        good = svc.good_samples
        if not good:
            why = "not collected"
            if svc.metrics:
                f = svc.metrics[-1].fetch
                why = (f.error or ("timed out" if f.timed_out else f"status {f.status}"))
            out.append(f"/metrics from {svc.label} ({why})")
        elif not ctx.progress(svc).judged:
            out.append(f"a second /metrics sample >= 1 s later from {svc.label} "
                       "(progress cannot be judged from one scrape)")
    if ctx.servers() and not ctx.labelled_dumps:
        out.append("py-spy stacks of the scheduler ranks")
    return out


#: findings about the capture itself, not the cluster: they never make a verdict DEGRADED
COLLECTION_GAPS = frozenset({"PYSPY_UNAVAILABLE"})


def decide(ctx: Context, findings: Sequence[Finding]) -> tuple[Verdict, str]:
    """The verdict and a one-line reason; see the module docs of the rules for evidence."""
    crit = [f for f in findings if f.severity == "critical"]
    # a collection gap (py-spy could not run) is listed, but says nothing about the cluster
    warn = [f for f in findings if f.severity == "warning" and f.key not in COLLECTION_GAPS]
    wedge = [f for f in crit if f.wedge]
    servers = ctx.servers()
    with_metrics = [s for s in servers if s.good_samples]
    judged = [s for s in with_metrics if ctx.progress(s).judged]
    if wedge:
        return "WEDGED", f"{wedge[0].key}: {wedge[0].title}"
    if not with_metrics:
        if crit:
            return "DEGRADED", (f"{crit[0].key}: {crit[0].title} (no /metrics from any "
                                "server: progress unknown)")
        return "UNKNOWN", "no /metrics from any server: too little evidence"
    if crit or warn:
        top = (crit or warn)[0]
        single = "" if judged else " (one /metrics sample only: a wedge cannot be shown)"
        return "DEGRADED", f"{top.key}: {top.title}{single}"
    from pdforensics.analysis.metrics_view import work_in_flight

    moved = [s for s in judged if ctx.progress(s).moved]
    busy = [s for s in with_metrics if work_in_flight(s)]
    if moved:
        return "HEALTHY", f"progress observed on {', '.join(s.label for s in moved)}"
    if not busy:
        return "HEALTHY", "no work in flight"
    return "UNKNOWN", ("work in flight but progress could not be judged "
                       "(need 2 /metrics samples >= 1 s apart)")


def analyze(capture: LoadedCapture, client_dumps: Sequence[Path] = ()) -> Analysis:
    """Every rule over one capture; findings sorted most specific critical first. Client
    dumps recorded in the bundle (capture --client-dump) go beside the ones given here."""
    from pdforensics.analysis.client_dumps import recorded_client_dumps

    given = tuple(read_client_dump(Path(p)) for p in client_dumps)
    return analyze_context(Context(capture, recorded_client_dumps(capture) + given))


def analyze_context(ctx: Context, sources: Sequence[Source] | None = None) -> Analysis:
    """Every rule over a prepared context (a capture and its client dumps), then the one
    reasoning pass over the evidence (``sources``: the loose files triage read; else the
    capture's own) and the findings."""
    from pdforensics.analysis.merge import merge_findings

    found, skipped = run_rules(ctx)
    findings = merge_findings(found)  # one symptom seen several ways -> one finding
    verdict, why = decide(ctx, findings)
    missing = missing_evidence(ctx)
    counts = {s: sum(1 for f in findings if f.severity == s)
              for s in ("critical", "warning", "info")}
    summary = (f"{verdict}: {why}. {counts['critical']} critical, {counts['warning']} "
               f"warning, {counts['info']} info findings; {len(skipped)} rules skipped.")
    if sources is None:
        sources = capture_sources(ctx.capture, [(c.path, c.goroutines) for c in ctx.client_dumps])
    diagnosis = diagnose_evidence(sources, findings)
    return Analysis(verdict, tuple(findings), tuple(skipped), summary, tuple(missing), diagnosis)


def analyze_path(bundle_path: str | Path, client_dumps: Sequence[Path] = (),
                 capture: LoadedCapture | None = None) -> Analysis:
    """Load a bundle (unless the caller already did), analyze it, write analysis.json."""
    if capture is None:
        capture = load_capture(bundle_path)
    result = analyze(capture, client_dumps)
    write_analysis(Path(capture.path), result)
    return result


def format_analysis_text(a: Analysis, max_evidence: int = 6) -> str:
    """Terminal rendering: verdict, findings with evidence and next step, missing, skipped."""
    from pdforensics.terminal import field  # host text: one line each, controls shown

    lines = [f"VERDICT: {a.verdict}", field(a.summary), ""]
    if a.diagnosis is not None:  # the reading first, the findings that support it below
        from pdforensics.analysis.pdpath.render import diagnosis_text

        lines.extend(diagnosis_text(a.diagnosis, field))
        lines.append("")
    for f in a.findings:
        lines.append(f"[{f.severity.upper()}] {f.key}: {field(f.title)}")
        for e in f.evidence[:max_evidence]:
            lines.append(f"    - {field(e)}")
        if len(f.evidence) > max_evidence:
            lines.append(f"    ... {len(f.evidence) - max_evidence} more")
        if f.merged:
            lines.append(f"    merged: {', '.join(f.merged)}")
        lines.append(f"    next: {field(f.next_step)}")
    if a.missing:
        lines.append("")
        lines.append("Missing evidence:")
        lines.extend(f"  - {field(m)}" for m in a.missing)
    if a.skipped:
        lines.append("")
        lines.append("Skipped rules:")
        lines.extend(f"  - {s.rule}: {s.reason}" for s in a.skipped)
    return "\n".join(lines) + "\n"
