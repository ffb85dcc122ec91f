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
