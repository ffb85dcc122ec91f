"""Triage throughput: `pdforensics triage` on a large log made of the field corpus's real
SGLang logs (issue 30: 100 MB in at most 10 s on this machine).

Usage: .venv/bin/python benchmarks/bench_triage.py [--mb 100] [--control]

The log: every file of tests/data/field/sglang_log and tests/data/field/log, concatenated and
repeated up to the size asked (watchdog dumps, tracebacks, transfer failures, batch lines);
with --control, only the 0.5.23 prefill control log (startup and batch lines), repeated. Each
copy's times are moved 7 hours past the one before (a real long log has no repeated times).
Timed: the CLI as a fresh process (best of --runs), and in-process per step (read, analysis),
against a baseline measured in the same run on the same file: one pass of Python over its
lines with one RE2 search per line (the least a line-oriented reader can cost).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pdforensics import linear  # noqa: E402

FIELD = Path(__file__).resolve().parent.parent / "tests" / "data" / "field"
CONTROL = FIELD / "sglang_log" / "gen-sglang0523-prefill-startup-and-batches-control.log"


_STAMP = linear.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")


def _shifted(blob: str, hours: int) -> str:
    """The text with every time moved ``hours`` later: each copy of the corpus has its own times,
    as a long log has (no reader gets a cache hit from a copy it read before)."""
    import calendar
    import time as _t

    def move(m: linear.Match[str]) -> str:
        y, mo, d, h, mi, s = (int(x) for x in m.groups())
        try:
            t = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + hours * 3600
        except (ValueError, OverflowError):
            return m.group(0)
        sep = m.group(0)[10]
        return _t.strftime(f"%Y-%m-%d{sep}%H:%M:%S", _t.gmtime(t))

    return _STAMP.sub(move, blob)


def build(path: Path, mb: float, control: bool) -> int:
    files = [CONTROL] if control else sorted((FIELD / "sglang_log").glob("*.log")) + sorted(
        (FIELD / "log").glob("*.log"))
    blob = "".join(t if t.endswith("\n") else t + "\n"
                   for t in (f.read_text(errors="replace") for f in files))
    want = int(mb * 1024 * 1024)
    with path.open("w") as out:
        size, copy = 0, 0
        while size < want:
            part = _shifted(blob, copy * 7)
            out.write(part)
            size += len(part.encode())
            copy += 1
    return size


def baseline(path: Path) -> float:
    """One pass over the lines with one RE2 search each."""
    pat = linear.compile(r"Traceback|Error|timed out|Decode batch|Prefill batch")
    t0 = time.perf_counter()
    hits = 0
    with path.open(errors="replace") as f:
        for line in f:
            if pat.search(line):
                hits += 1
    return time.perf_counter() - t0


def cli(path: Path) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pdforensics", "triage", str(path)],
                       capture_output=True, text=True)
    took = time.perf_counter() - t0
    verdict = next((ln for ln in p.stdout.splitlines() if ln.startswith("VERDICT")), "?")
    return took, p.returncode, verdict


def steps(path: Path) -> tuple[float, float]:
    from pdforensics.triage.read import read_paths
    from pdforensics.triage.run import triage_artifacts

    t0 = time.perf_counter()
    arts = read_paths(str(path))
    t1 = time.perf_counter()
    triage_artifacts(arts)
    return t1 - t0, time.perf_counter() - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the log, MB [100]")
    ap.add_argument("--control", action="store_true", help="batch lines only (a healthy log)")
    ap.add_argument("--runs", type=int, default=1, help="CLI runs, best taken [1]")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-triage-") as tmp:
        path = Path(tmp) / "sglang.log"
        size = build(path, args.mb, args.control)
        mb = size / 1024 / 1024
        base = min(baseline(path) for _ in range(2))
        read_s, analysis_s = steps(path)
        best = min((cli(path) for _ in range(args.runs)), key=lambda r: r[0])
        took, rc, verdict = best
        print(f"log: {mb:.1f} MB ({'control' if args.control else 'field mix'}), "
              f"{sum(1 for _ in path.open(errors='replace'))} lines")
        print(f"baseline (one RE2 search per line): {base:.2f} s ({mb / base:.1f} MB/s)")
        print(f"in-process: read {read_s:.2f} s, analysis {analysis_s:.2f} s")
        print(f"pdforensics triage (CLI, exit {rc}): {took:.2f} s ({mb / took:.1f} MB/s), "
              f"{took / base:.1f}x the baseline; {verdict}")
        per100 = took * 100 / mb
        print(f"per 100 MB: {per100:.1f} s (floor: 10 s) -> {'met' if per100 <= 10 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
