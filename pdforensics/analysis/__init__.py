"""Analysis over a loaded capture: rules -> findings -> verdict; cross-rank stack buckets.

``analyze(capture)`` runs every rule registered in ``findings.RULES`` (one module per rule
family under ``analysis/rules``) and returns an ``Analysis``; ``analyze_path(bundle)`` also
writes ``analysis.json`` into the bundle.
"""

from __future__ import annotations

from pdforensics.analysis.engine import (
    analysis_json,
    analyze,
    analyze_path,
    format_analysis_text,
)
from pdforensics.analysis.findings import RULES, Analysis, Evidence, Finding, Skipped, rule

__all__ = ["RULES", "Analysis", "Evidence", "Finding", "Skipped", "analysis_json", "analyze",
           "analyze_path", "format_analysis_text", "rule"]
