"""doctor's checklist for a terminal: grouped by host, host text neutralised."""

from __future__ import annotations

from itertools import groupby

from pdforensics.doctor.model import DoctorReport
from pdforensics.terminal import field

_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


def format_report(report: DoctorReport, verbose: bool = True) -> str:
    """The checklist; ok lines only with verbose, warn/fail lines always with their fix."""
    lines = [f"doctor: cluster {field(report.cluster)}"]
    for host, group in groupby(report.checks, key=lambda c: c.host):
        checks = list(group)
        shown = [c for c in checks if verbose or c.status != "ok"]
        bad = sum(c.status != "ok" for c in checks)
        lines.append(f"\n{field(host)}  ({len(checks) - bad}/{len(checks)} ok)")
        for c in shown:
            subject = f" [{field(c.subject)}]" if c.subject else ""
            lines.append(f"  {_MARK[c.status]} {c.key}{subject}: {field(c.evidence)}")
            if c.fix:
                lines.append(f"         fix: {field(c.fix)}")
    lines.append("")
    lines.append(report.summary())
    if report.bundle:
        lines.append(f"bundle: {field(report.bundle)}")
    return "\n".join(lines) + "\n"


def markdown_report(report: DoctorReport) -> str:
    """doctor --markdown: the checks that fail or warn with their fixes, to paste into a
    ticket; host text in code spans (summary_md's rules), our fixes escaped."""
    from pdforensics.analysis.summary_md import code, escape

    bad = [c for c in report.checks if c.status != "ok"]
    out = [f"### pdforensics doctor: {code(report.cluster)}", "", escape(report.summary()), ""]
    for c in bad:
        where = code(c.where) if c.where else ""
        out.append(f"- **{c.status.upper()}** {code(c.key)} {where}: {code(c.evidence, 300)}")
        if c.fix:
            out.append(f"  - fix: {escape(c.fix)}")
    if not bad:
        out.append(f"Every check passed ({len(report.checks)}).")
    return "\n".join(out) + "\n"
