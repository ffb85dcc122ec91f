"""Print issue #16's rule matrix (lab fault x new rule key) from the last lab test run.

Usage: .venv/bin/python scripts/rule_matrix_table.py [--update docs/rules.md] [ARTIFACT]
ARTIFACT defaults to tests/artifacts/rule_matrix.json (written by tests/support/rule_matrix.py
from tests/analysis/test_lab_verdicts_ssh.py and test_lab_requests_ssh.py); --update rewrites
the table between the BEGIN/END markers of that file.
"""

from __future__ import annotations

from typing import Any

from marked_table import run

BEGIN, END = "<!-- BEGIN rule-matrix -->", "<!-- END rule-matrix -->"
SHORT = {"SCHEDULER_PROBE_HANG": "PROBE_HANG", "ROUTER_BREAKER_OPEN": "BREAKER_OPEN",
         "SAFEGUARDS_DISABLED": "SAFEGUARDS", "STRANDED_BOOTSTRAP": "STRANDED",
         "FORGOTTEN_REQUESTS": "FORGOTTEN", "DECODE_ONLY_DISPATCH": "DECODE_ONLY"}


def table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0]["rules"]) if rows else []
    out = ["| lab | fault | " + " | ".join(SHORT.get(k, k) for k in keys) + " | top finding | verdict |",
           "|---|---|" + "---|" * len(keys) + "---|---|"]
    for r in rows:
        marks = " | ".join({"top": "**top**", "fired": "fired"}.get(r["rules"].get(k, "-"), "-") for k in keys)
        out.append(f"| {r['lab']} | {r['fault']} | {marks} | {r['top'] or '-'} | {r['verdict']} |")
    return "\n".join(out)


def main() -> None:
    run(table, "tests/artifacts/rule_matrix.json", BEGIN, END)


if __name__ == "__main__":
    main()
