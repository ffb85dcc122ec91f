"""Semantic diff of two captures: flags, env vars, packages, versions, units, layout."""

from __future__ import annotations

from pdforensics.catalog.cmdline import parse_flags
from pdforensics.diff.compare import Change, DiffResult, diff_bundles, diff_states
from pdforensics.diff.output import changes_for_report, diff_json, format_diff_text
from pdforensics.diff.state import ConfigState, extract_state, host_fingerprint
from pdforensics.diff.units import parse_unit_cat

__all__ = [
    "Change", "ConfigState", "DiffResult", "changes_for_report", "diff_bundles", "diff_json",
    "diff_states", "extract_state", "format_diff_text", "host_fingerprint", "parse_flags",
    "parse_unit_cat",
]
