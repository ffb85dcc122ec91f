"""Analysis over a loaded capture: rules -> findings -> verdict; cross-rank stack buckets.

``analyze(capture)`` runs every rule registered in ``findings.RULES`` (one module per rule
family under ``analysis/rules``) and returns an ``Analysis``; ``analyze_path(bundle)`` also
writes ``analysis.json`` into the bundle. Re-exports are lazy so that importing the stack
modules does not load the rules engine.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "analyze": "engine", "analyze_path": "engine", "analysis_json": "engine",
    "format_analysis_text": "engine",
    "Analysis": "findings", "Evidence": "findings", "Finding": "findings",
    "Skipped": "findings", "RULES": "findings", "rule": "findings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module == "findings":
        importlib.import_module("pdforensics.analysis.engine")  # registers the rules
    return getattr(importlib.import_module(f"pdforensics.analysis.{module}"), name)
