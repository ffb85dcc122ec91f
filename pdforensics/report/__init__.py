"""The incident report: one self-contained HTML file rendered from a bundle alone."""

from __future__ import annotations

from pdforensics.report.changes import Baseline
from pdforensics.report.page import render
from pdforensics.report.write import REPORT_FILE, write_report

__all__ = ["REPORT_FILE", "Baseline", "render", "write_report"]
