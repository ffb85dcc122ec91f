"""An analysis on the terminal: the first screen (verdict, since, mitigate now, diagnose), then
the findings with evidence, what was missing, history before the window; skipped rules folded
into one line unless verbose. Lines of styled parts (terminal.Line): plain for a pipe."""

from __future__ import annotations

import time

from pdforensics.analysis.findings import Analysis, Since
from pdforensics.terminal import SEVERITY_STYLE, VERDICT_STYLE, Line, field, plain

HISTORY_SHOWN = 8


def utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def since_text(since: Since, reference: float | None) -> str:
    """`2026-12-04 16:47:49 UTC (3 min before the capture; KV_WAITING_TIMEOUT in ...)`."""
    rel = f"{ago(reference - since.at)} before the capture; " if reference else ""
    return f"{utc(since.at)} ({rel}{field(since.evidence)})"


def headline_lines(a: Analysis, reference: float | None = None) -> list[Line]:
    """Verdict, since, mitigate now, diagnose: the four lines that open every summary."""
    lines: list[Line] = [("VERDICT: ", (a.verdict, VERDICT_STYLE.get(a.verdict, "bold")))]
    if a.verdict != "HEALTHY":
        lines.append(("since:        ", since_text(a.since, reference) if a.since is not None
                      else "unknown (no timed evidence tied to the findings)"))
    if a.mitigate:
        lines.append((("mitigate now: ", "bold"), field(a.mitigate)))
    if a.diagnose:
        lines.append((("diagnose:     ", "bold"), field(a.diagnose)))
    w = a.window
    if w is not None and w.start is not None:
        old = f"; {len(w.history)} item(s) before it, shown as history" if w.history else ""
        lines.append(("window:       ", f"from {utc(w.start)} ({field(w.how)}){old}"))
    return lines


def analysis_lines(a: Analysis, verbose: bool = False, max_evidence: int = 6,
                   reference: float | None = None) -> list[Line]:
    """Every line of `analyze`'s text output."""
    lines = headline_lines(a, reference)
    lines += [(field(a.summary),), ()]
    if a.diagnosis is not None:  # the reading first, the findings that support it below
        from pdforensics.analysis.pdpath.render import diagnosis_text

        lines += [(t,) for t in diagnosis_text(a.diagnosis, field)]
        lines.append(())
    for f in a.findings:
        lines.append(((f"[{f.severity.upper()}]", SEVERITY_STYLE.get(f.severity, "")),
                      f" {f.key}: {field(f.title)}"))
        lines += [(f"    - {field(e)}",) for e in f.evidence[:max_evidence]]
        if len(f.evidence) > max_evidence:
            lines.append((f"    ... {len(f.evidence) - max_evidence} more",))
        if f.merged:
            lines.append((f"    merged: {', '.join(f.merged)}",))
        lines.append((f"    next: {field(f.next_step)}",))
    if a.missing:
        lines += [(), ("Missing evidence:",)]
        lines += [(f"  - {field(m)}",) for m in a.missing]
    history = a.window.history if a.window is not None else ()
    if history:
        lines += [(), ("History (before the evidence window; shown, not judged):",)]
        shown = history if verbose else history[:HISTORY_SHOWN]
        lines += [(("  - " + field(h), "dim"),) for h in shown]
        if len(history) > len(shown):
            lines.append((f"  ... {len(history) - len(shown)} more (-v lists them)",))
    if a.skipped:
        lines.append(())
        if verbose:
            lines.append(("Skipped rules:",))
            lines += [(f"  - {s.rule}: {field(s.reason)}",) for s in a.skipped]
        else:
            lines.append(((f"{len(a.skipped)} rules skipped (their inputs were not in the "
                           "evidence; -v lists them)", "dim"),))
    return lines


def format_analysis_text(a: Analysis, max_evidence: int = 6, verbose: bool = True,
                         reference: float | None = None) -> str:
    """The text of `analysis_lines`, plain."""
    return plain(analysis_lines(a, verbose, max_evidence, reference))
