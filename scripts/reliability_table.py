"""Print the fault-matrix table of docs/reliability.md from the last test run's artifact.

Usage: .venv/bin/python scripts/reliability_table.py [--update docs/reliability.md] [ARTIFACT]
ARTIFACT defaults to tests/artifacts/fault_matrix.json (written by tests/e2e/test_fault_matrix.py);
--update rewrites the table between the BEGIN/END markers of that file.
"""

from __future__ import annotations

import re

from marked_table import run


def cell(text: str) -> str:
    text = re.sub(r"/tmp/pytest-of-\w+/pytest-\d+/[^/ ]+/", "…/", str(text))
    return text.replace("|", "\\|")


BEGIN, END = "<!-- BEGIN fault-matrix -->", "<!-- END fault-matrix -->"


def table(rows: list[dict[str, object]]) -> str:
    out = ["| fault | what the user sees | what the bundle holds | exit | ended after | strays gone after |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        strays = "-" if r["strays_gone_s"] is None else f"{float(r['strays_gone_s']):.1f} s"  # type: ignore[arg-type]
        out.append(f"| {cell(str(r['fault']))} | {cell(str(r['sees']))} | {cell(str(r['holds']))} | {r['exit']} | "
                   f"{float(r['end_s']):.1f} s | {strays} |")  # type: ignore[arg-type]
    return "\n".join(out)


def main() -> None:
    run(table, "tests/artifacts/fault_matrix.json", BEGIN, END)


if __name__ == "__main__":
    main()
