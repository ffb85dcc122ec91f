"""The end of a capture on the terminal: what an on-call engineer needs, in a dozen lines.

The first screen opens like the report's banner and the Markdown summary: the verdict, since
when (from the evidence tied to the findings that set it), one *mitigate now* line and one
*diagnose* line; then the critical findings (and how many more), what hung (evidence) and what
the tool could not collect (gaps), and where the bundle, its archive and the report are.
"""

from __future__ import annotations

from typing import Any

from pdforensics.terminal import SEVERITY_STYLE, VERDICT_STYLE, Line, field

GAPS_SHOWN = 15


def summary_lines(doc: dict[str, Any], verbose: bool = False) -> list[Line]:
    """The text summary of a capture document (outcome_json plus the analysis and paths)."""
    status = doc["status"] + (" (nothing collected)" if not doc.get("collected", True) else "")
    lines: list[Line] = _verdict(doc) if doc.get("verdict") else []  # the first screen first
    lines.append(("status: ", (status, "bold" if status == "complete" else "amber bold"),
                  " (the capture's own: partial means the tool could not collect something)"
                  if status != "complete" else ""))
    lines += [(f"  partial: {field(r)}",) for r in doc["partial_reasons"]]
    for h in doc.get("hung", ()):
        lines.append((f"  hung (evidence, not a gap): {field(h)}",))
    gaps = doc["gaps"]
    if gaps:
        lines.append((f"gaps (the tool could not collect): {len(gaps)}",))
        shown = gaps if verbose else gaps[:GAPS_SHOWN]
        for g in shown:
            lines.append((f"  {field(g['host'])} {field(g['key'])}: {field(g['error'])}"
                          + (f" ({field(g['stderr'])})" if g["stderr"] else ""),))
        if len(gaps) > len(shown):
            lines.append((f"  ... {len(gaps) - len(shown)} more in manifest.json",))
    lines.append((f"bundle:  {doc['bundle']}",))
    if doc.get("archive"):
        lines.append((f"archive: {doc['archive']}",))
    if doc.get("report"):
        lines.append((f"report:  {doc['report']}",))
    if doc.get("stored"):
        lines.append((f"store:   {doc['stored'].get('path') or doc['stored'].get('error')}",))
    return lines


def _verdict(doc: dict[str, Any]) -> list[Line]:
    verdict = doc["verdict"]
    lines: list[Line] = [("VERDICT: ", (verdict, VERDICT_STYLE.get(verdict, "bold")))]
    since = doc.get("since")
    if verdict != "HEALTHY":
        lines.append(("since:        ", f"{since['utc'].replace('T', ' ').replace('Z', ' UTC')} "
                      f"({field(since['evidence'])})" if since else
                      "unknown (no timed evidence tied to the findings)"))
    if doc.get("mitigate"):
        lines.append((("mitigate now: ", "bold"), field(doc["mitigate"])))
    if doc.get("diagnose"):
        lines.append((("diagnose:     ", "bold"), field(doc["diagnose"])))
    findings = doc["findings"]
    critical = [f for f in findings if f["severity"] == "critical"]
    shown = critical or findings[:1]
    if shown:
        lines.append(("findings:",))
    for f in shown:
        lines.append(("  ", (f"[{f['severity']}]", SEVERITY_STYLE.get(f["severity"], "")),
                      f" {f['key']}: {field(f['title'])}"))
    if len(findings) > len(shown):
        lines.append((f"  ... {len(findings) - len(shown)} more (pdforensics analyze "
                      f"{doc.get('archive') or doc['bundle']})",))
    return lines + _history_and_samples(doc)


def _history_and_samples(doc: dict[str, Any]) -> list[Line]:
    lines: list[Line] = []
    window = doc.get("window")
    if window and window.get("history"):
        lines.append(((f"history: {len(window['history'])} item(s) before the evidence window "
                       f"({field(window['how'])}), shown in the report, not judged", "dim"),))
    if doc.get("samples") == 1 and doc["verdict"] != "WEDGED":
        lines.append((("note: one /metrics sample cannot show a wedge (frozen counters need "
                       "two); capture with --samples 2 or more", "amber"),))
    return lines
