"""The verdict matrix on the real SGLang 0.5.23 engine (issue 34), every fault, over real sshd.

    flock /work/coord/lab.lock .venv/bin/python benchmarks/real_engine_matrix.py [--out DIR] [--only F,...]

Lab A (TP 1): healthy, rank-stopped, forgotten-requests, prefill-frozen, kv-full, server-killed,
breaker-open. Lab B (TP 2): healthy, rank-stopped (one decode rank stopped while its peer waits in
a real gloo all_reduce), watchdog (SGLang's own, fired by its /slow_down). One lab at a time;
each is stopped before the next starts. Prints the table and writes DIR/real_engine_matrix.json.
Exit 1 when a row misses its expectation."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pdforensics.errors import PdforensicsError  # noqa: E402
from pdforensics.lab import lab_down, lab_up  # noqa: E402
from tests.support import ports  # noqa: E402
from tests.support.engine_matrix import Row, capture_fault, table, write_rows  # noqa: E402

LABS = {
    "A-tp1": (1, ("healthy", "rank-stopped", "forgotten-requests", "prefill-frozen", "kv-full",
                  "server-killed", "breaker-open")),
    "B-tp2": (2, ("healthy", "rank-stopped", "watchdog")),
}


def run_lab(name: str, tp: int, faults: tuple[str, ...], out: Path, rows: list[Row]) -> None:
    lab_dir = out / f"lab-{name}"
    t0 = time.monotonic()
    info = lab_up(lab_dir, ssh=True, base_port=ports.block(), engine="sglang", tp=tp,
                  say=lambda line: print(line, flush=True))
    print(f"{name}: lab up in {time.monotonic() - t0:.0f} s", flush=True)
    try:
        for fault in faults:
            # forgotten-requests -> prefill-frozen is the same stop seen later: no heal between
            try:
                row = capture_fault(info, fault, out, name)
            except PdforensicsError as exc:  # the fault did not show: a row that says so
                row = Row(name, fault, "-", None, "", [], [], None, 0.0, 0.0, "", [f"switch failed: {exc}"])
            rows.append(row)
            print(f"{name} {fault}: {row.verdict} top {row.top} ({row.top_title[:90]}) switch {row.switch_s} s "
                  f"capture {row.capture_s} s {'ok' if row.ok else row.problems}", flush=True)
    finally:
        lab_down(lab_dir)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", default="", help="labs to run, e.g. A-tp1")
    ap.add_argument("--faults", default="", help="these faults only, in the lab's order (healthy first)")
    a = ap.parse_args()
    out = (a.out or Path(tempfile.mkdtemp(prefix="pdfx-engine-matrix-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    t0 = time.monotonic()
    for name, (tp, faults) in LABS.items():
        if a.only and name not in a.only.split(","):
            continue
        if a.faults:
            faults = tuple(f for f in faults if f in a.faults.split(","))
        run_lab(name, tp, faults, out, rows)
    write_rows(rows, out / "real_engine_matrix.json")
    print(table(rows))
    print(f"matrix: {len(rows)} rows, {sum(r.ok for r in rows)} as expected, {time.monotonic() - t0:.0f} s; "
          f"bundles and lab logs in {out}")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
