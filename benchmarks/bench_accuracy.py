"""Accuracy on the field corpus: how much of what operators really paste triage reads right.

Walks tests/data/field/**/*.meta.json; reads each artifact alone, as `pdforensics triage`
would, and prints per family and overall:
  - parse rate: non-empty artifacts read without error into a non-empty result of the
    kind the sidecar names (threads for stacks, goroutines, samples for metrics, lines for
    logs, keys for JSON, a classified failure for py-spy errors);
  - expected: the share of artifacts whose whole sidecar ``expect`` (and ``kind``) is met;
then every miss with its reason (which key, expected vs got). The ``reading`` keys (stage,
side, suspect, causes, consequences, root_cause, wedge, control) are scored against the
diagnosis `triage` gives the file alone (pdforensics/triage/score_reading.py); the counts of
control cases that got a wedge or a critical finding, and of root causes named where the
thread left them open, are printed with the issue's floors (open set >= 95 %, 0 and 0).

Exit status: 0 unless it crashes, or a floor given with --min-parse / --min-expected
(percent) is not reached (then 1). Misses alone never fail it: it is a benchmark.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# the checkout this script sits in is the code scored (not whichever pdforensics the venv has
# installed: a worktree of an older commit scores that commit)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pdforensics.triage.score import (  # noqa: E402
    Score,
    Tally,
    by_family,
    find_sidecars,
    score_artifact,
    tally,
)

ROOT = Path(__file__).resolve().parent.parent / "tests" / "data" / "field"


def _row(t: Tally) -> str:
    return (f"{t.name:<14} {t.total:>5} {t.parsed:>4}/{t.non_empty:<4} {t.parse_rate:>6.1f}% "
            f"{t.expected:>4}/{t.total:<4} {t.expected_rate:>6.1f}%")


def _rel(p: Path | None, root: Path) -> str:
    if p is None:
        return "?"
    try:
        return str(p.relative_to(root))
    except ValueError:
        return str(p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="corpus folder [tests/data/field]")
    ap.add_argument("--min-parse", type=float, help="fail (exit 1) below this parse rate, %%")
    ap.add_argument("--min-expected", type=float, help="fail (exit 1) below this expected share, %%")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    scores: list[Score] = [score_artifact(m) for m in find_sidecars(args.root)]
    took = time.perf_counter() - t0
    fams, overall = by_family(scores), tally("overall", scores)
    misses = [s for s in scores if not s.expected]
    safety = {"controls": sum(s.control for s in scores),
              "control_false_alarms": [_rel(s.artifact or s.meta, args.root)
                                       for s in scores if s.control_alarm],
              "invented_root_causes": [_rel(s.artifact or s.meta, args.root)
                                       for s in scores if s.invented]}
    if args.json:
        print(json.dumps({
            "families": [t.__dict__ | {"parse_rate": t.parse_rate,
                                       "expected_rate": t.expected_rate} for t in fams],
            "overall": overall.__dict__ | {"parse_rate": overall.parse_rate,
                                           "expected_rate": overall.expected_rate},
            "misses": [{"artifact": _rel(s.artifact or s.meta, args.root),
                        "reasons": [str(m) for m in s.misses]} for s in misses],
            "safety": safety, "seconds": round(took, 3)}, indent=1))
    else:
        print(f"field corpus: {args.root} ({len(scores)} artifacts, {took:.2f} s)")
        print(f"{'family':<14} {'n':>5} {'parsed':>9} {'rate':>7} {'expected':>9} {'share':>7}")
        for t in fams:
            print(_row(t))
        print(_row(overall))
        print(f"controls {safety['controls']}: {len(safety['control_false_alarms'])} got a wedge "
              f"or a critical finding (floor 0); root causes invented: "
              f"{len(safety['invented_root_causes'])} (floor 0); expected share "
              f"{overall.expected_rate:.1f}% (issue 30 floor: open set >= 95%)")
        for what in ("control_false_alarms", "invented_root_causes"):
            for a in safety[what]:
                print(f"  {what}: {a}")
        if misses:
            print(f"\nmisses ({len(misses)}):")
            for s in misses:
                print(f"  {_rel(s.artifact or s.meta, args.root)}")
                for m in s.misses:
                    print(f"      {m}")
    failed = []
    if args.min_parse is not None and overall.parse_rate < args.min_parse:
        failed.append(f"parse rate {overall.parse_rate:.1f}% < {args.min_parse}%")
    if args.min_expected is not None and overall.expected_rate < args.min_expected:
        failed.append(f"expected share {overall.expected_rate:.1f}% < {args.min_expected}%")
    for f in failed:
        print(f"FLOOR NOT MET: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
