#!/usr/bin/env python3
"""Print (or --update) tests/data/field/known_gaps.json from the scorer: per artifact, the
sidecar keys the readers miss today. Reasons already written in the file are kept; a new gap
gets "not met yet" and should be given its real reason by hand. Review the diff: a gap that
appears is a regression unless the artifact or its sidecar is new."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pdforensics.triage.score import find_sidecars, score_artifact  # noqa: E402

FIELD = ROOT / "tests" / "data" / "field"
GAPS = FIELD / "known_gaps.json"


def current() -> dict[str, dict[str, str]]:
    old = json.loads(GAPS.read_text()) if GAPS.exists() else {}
    out: dict[str, dict[str, str]] = {}
    for meta in find_sidecars(FIELD):
        s = score_artifact(meta)
        if not s.misses:
            continue
        rel = f"{meta.parent.name}/{(s.artifact or meta).name}"
        keys = sorted({m.key for m in s.misses})
        out[rel] = {k: old.get(rel, {}).get(k, "not met yet") for k in keys}
    return out


def render(gaps: dict[str, dict[str, str]]) -> str:
    rows = [f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(gaps.items())]
    return "{\n" + ",\n".join(rows) + "\n}\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--update", action="store_true", help="write known_gaps.json")
    args = ap.parse_args()
    text = render(current())
    if args.update:
        GAPS.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
