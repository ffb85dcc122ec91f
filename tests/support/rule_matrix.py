"""Issue #16's rule matrix: after each lab capture, the new rule keys that fired must be
exactly the fault's own (or none), and each row goes to tests/artifacts/rule_matrix.json
(the table in docs/rules.md)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdforensics.analysis.findings import Analysis

NEW_RULES = ("SCHEDULER_PROBE_HANG", "CLOCK_SKEW", "ROUTER_BREAKER_OPEN", "SAFEGUARDS_DISABLED",
             "STRANDED_BOOTSTRAP", "PREALLOC_LEAK", "FORGOTTEN_REQUESTS", "DECODE_ONLY_DISPATCH")
ARTIFACT = Path(os.environ.get("PDFX_ARTIFACTS", Path(__file__).resolve().parents[1] / "artifacts")) \
    / "rule_matrix.json"


def new_rules(a: Analysis) -> set[str]:
    """The new rule keys present in the analysis (after merging)."""
    return {f.key for f in a.findings} & set(NEW_RULES)


@dataclass
class RuleMatrix:
    """Rows (lab, fault) -> which new rule fired, and whether it was the top finding."""

    lab: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    def check(self, a: Analysis, fault: str, expected: set[str], top: str | None = None) -> None:
        """Record the row, then assert the fired set is `expected` and the top finding `top`."""
        fired = new_rules(a)
        first = a.findings[0].key if a.findings else None
        self.rows.append({"lab": self.lab, "fault": fault, "top": first, "verdict": a.verdict,
                          "rules": {k: ("top" if k == first else "fired") if k in fired else "-"
                                    for k in NEW_RULES}})
        assert fired == expected, (fault, sorted(fired), [f.key for f in a.findings])
        if top is not None:
            assert first == top, (fault, [f"{f.key}: {f.title}" for f in a.findings])  # titles say why

    def write(self, path: Path = ARTIFACT) -> None:
        """Merge into the artifact: a row replaces the earlier row of its (lab, fault)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = []
        mine = {(r["lab"], r["fault"]): r for r in self.rows}
        merged = [mine.pop((r["lab"], r["fault"]), r) for r in old
                  if isinstance(r, dict) and "lab" in r and "fault" in r]
        merged += [r for r in self.rows if (r["lab"], r["fault"]) in mine]
        path.write_text(json.dumps(merged, indent=1))
