"""Print the fault-matrix table of docs/reliability.md from the last test run's artifact.

Usage: .venv/bin/python scripts/reliability_table.py [tests/artifacts/fault_matrix.json]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def cell(text: str) -> str:
    text = re.sub(r"/tmp/pytest-of-\w+/pytest-\d+/[^/ ]+/", "…/", str(text))
    return text.replace("|", "\\|")


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/artifacts/fault_matrix.json")
    rows = json.loads(path.read_text())
    print("| fault | what the user sees | what the bundle holds | exit | ended after | strays gone after |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        strays = "-" if r["strays_gone_s"] is None else f"{r['strays_gone_s']:.1f} s"
        print(f"| {cell(r['fault'])} | {cell(r['sees'])} | {cell(r['holds'])} | {r['exit']} | "
              f"{r['end_s']:.1f} s | {strays} |")


if __name__ == "__main__":
    main()
