"""Accuracy on the field corpus: how much of what operators really paste triage reads right.

Walks tests/data/field/**/*.meta.json; reads each artifact alone, as `pdforensics triage`
would, and prints per family and overall:
  - parse rate: non-empty artifacts read without error into a non-empty result of the
    kind the sidecar names (threads for stacks, goroutines, samples for metrics, lines for
    logs, keys for JSON, a classified failure for py-spy errors);
  - expected: the share of artifacts whose whole sidecar ``expect`` (and ``kind``) is met;
then every miss with its reason (which key, expected vs got).

Exit status: 0 unless it crashes, or a floor given with --min-parse / --min-expected
(percent) is not reached (then 1). Misses alone never fail it: it is a benchmark.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pdforensics.triage.score import Score, Tally, by_family, find_sidecars, score_artifact, tally

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
    if args.json:
        print(json.dumps({
            "families": [t.__dict__ | {"parse_rate": t.parse_rate,
                                       "expected_rate": t.expected_rate} for t in fams],
            "overall": overall.__dict__ | {"parse_rate": overall.parse_rate,
                                           "expected_rate": overall.expected_rate},
            "misses": [{"artifact": _rel(s.artifact or s.meta, args.root),
                        "reasons": [str(m) for m in s.misses]} for s in misses],
            "seconds": round(took, 3)}, indent=1))
    else:
        print(f"field corpus: {args.root} ({len(scores)} artifacts, {took:.2f} s)")
        print(f"{'family':<14} {'n':>5} {'parsed':>9} {'rate':>7} {'expected':>9} {'share':>7}")
        for t in fams:
            print(_row(t))
        print(_row(overall))
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
