"""Offline work at fleet scale: analyze + report of a 32-host capture, `stacks` on 10,000 threads,
`diff` of two 32-host captures, each against a baseline measured in the same run.

Usage: .venv/bin/python benchmarks/bench_offline.py [--bundle PATH]

- analyze + report: a synthetic capture (tests/support/pd_capture.py) of 32 hosts x 8 GPUs x
  16 processes x 3 /metrics samples x 2 py-spy dumps, 400 log lines each (bench_report.py's
  shape at 32 hosts), optionally also a real bundle (--bundle, e.g. from bench_fanout.py).
  Timed in-process (best of 3): load_capture, analysis, render, and write_report end to end
  (load + analysis + render + write, target < 3 s); and `pdforensics analyze` and `pdforensics
  report` as fresh processes. Baseline: the naive report (every parsed view as JSON in one <pre>).
  The same at 8 hosts, and the analysis alone at 8, 32 and 128 hosts: per-host cost stays flat
  unless a step is quadratic.
- stacks: bench_stacks.py's 10,000 threads in 64 py-spy dumps, its naive baseline and CLI timing.
- diff: two synthetic 32-host captures (tests/support/fleet.py, bench_diff.py's shape: TP8,
  300 packages, 3 /metrics samples, a 20k-line log, 100 env vars per process), against bench_diff's
  difflib text diff of the same raw files; and the same at 8 hosts.
"""

from __future__ import annotations

import argparse
import difflib
import html
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support
import bench_stacks  # noqa: E402
from bench_diff import text_of  # noqa: E402

from pdforensics.analysis.engine import analysis_json, analyze  # noqa: E402
from pdforensics.diff import diff_bundles  # noqa: E402
from pdforensics.report import render, write_report  # noqa: E402
from pdforensics.views.codec import to_jsonable  # noqa: E402
from pdforensics.views.loaded import load_capture  # noqa: E402
from tests.support.fleet import pd_cluster, write_capture  # noqa: E402
from tests.support.pd_capture import SynthSpec, write_synthetic  # noqa: E402

REPORT_TARGET_S = 3.0
T0 = 1_800_000_000.0
CLI = [sys.executable, "-c", "from pdforensics.cli import main; main()"]


def best(fn: Callable[[], Any], runs: int = 3) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def cli_s(*args: str, runs: int = 3) -> float:
    def once() -> None:
        subprocess.run([*CLI, *args], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return best(once, runs)[0]


def report_figures(bundle: Path) -> dict[str, float]:
    load_s, capture = best(lambda: load_capture(bundle))
    analyze_s, result = best(lambda: analysis_json(analyze(capture)))
    render_s, _page = best(lambda: render(capture, result))
    total_s, out = best(lambda: write_report(bundle))
    naive_s, _naive = best(lambda: "<!DOCTYPE html><pre>" + html.escape(json.dumps(
        to_jsonable(capture.hosts), default=str)) + "</pre>")
    return {"load": load_s, "analyze": analyze_s, "render": render_s, "write_report": total_s, "naive": naive_s,
            "hosts": len(capture.hosts), "results": len(capture.results), "size": Path(out).stat().st_size,
            "cli_analyze": cli_s("analyze", str(bundle)), "cli_report": cli_s("report", str(bundle))}


def print_report(label: str, r: dict[str, float]) -> None:
    print(f"[{label}] {r['hosts']:.0f} hosts, {r['results']:.0f} results: load_capture {r['load']:.3f} s, "
          f"analysis {r['analyze']:.3f} s, render {r['render']:.3f} s; write_report end to end "
          f"{r['write_report']:.3f} s ({r['size'] / 1e6:.2f} MB); naive json-in-<pre> {r['naive']:.3f} s "
          f"(ratio write_report / naive {r['write_report'] / r['naive']:.1f}x)")
    print(f"[{label}] fresh process: `pdforensics analyze` {r['cli_analyze']:.3f} s, "
          f"`pdforensics report` {r['cli_report']:.3f} s", flush=True)


def analyze_report(tmp: Path, extra: Path | None) -> bool:
    spec = dict(gpus=8, processes=16, samples=3, stack_dumps=2, log_lines=400)
    small = report_figures(write_synthetic(tmp / "r8", SynthSpec(hosts=8, **spec)))  # type: ignore[arg-type]
    big = report_figures(write_synthetic(tmp / "r32", SynthSpec(hosts=32, **spec)))  # type: ignore[arg-type]
    print_report("report, synthetic 8 hosts", small)
    print_report("report, synthetic 32 hosts", big)
    ok = big["write_report"] < REPORT_TARGET_S
    print(f"[report] 32 / 8 hosts: write_report {big['write_report'] / small['write_report']:.1f}x, analysis "
          f"{big['analyze'] / small['analyze']:.1f}x for 4x the hosts; analyze + report of 32 hosts "
          f"{big['write_report']:.2f} s (target < {REPORT_TARGET_S:g} s: {'met' if ok else 'MISSED'})")
    if extra is not None:
        print_report(f"report, {extra.name}", report_figures(extra))
    scaling(tmp, spec)
    return ok


def scaling(tmp: Path, spec: dict[str, int]) -> None:
    """Analysis time per host at 8, 32 and 128 hosts: flat when nothing is quadratic."""
    rows = []
    for n in (8, 32, 128):
        capture = load_capture(write_synthetic(tmp / f"s{n}", SynthSpec(hosts=n, **spec)))  # type: ignore[arg-type]
        t, _ = best(lambda c=capture: analysis_json(analyze(c)))
        rows.append(f"{n} hosts {t:.3f} s ({1000 * t / n:.1f} ms/host)")
    print("[analysis scaling] " + ", ".join(rows), flush=True)


def stacks() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = bench_stacks.make_dumps(Path(tmp))
        t_ours, c_ours, rep = bench_stacks.best(lambda: bench_stacks.ours(paths))
        t_naive, c_naive, _base = bench_stacks.best(lambda: bench_stacks.naive(paths), runs=1)
        t_cli = bench_stacks.cli_seconds(paths)
    assert isinstance(rep, dict) and rep["threads"] == bench_stacks.THREADS
    print(f"[stacks] {bench_stacks.THREADS} threads in {bench_stacks.PROCESSES} dumps: read+parse+analyze "
          f"{t_ours:.3f} s wall ({c_ours:.3f} s CPU, best of 3, cold); naive baseline {t_naive:.3f} s "
          f"({c_naive:.3f} s CPU); ratio {c_naive / c_ours:.1f}x; `pdforensics stacks` fresh process {t_cli:.3f} s",
          flush=True)


def diff_pair(root: Path, n: int) -> tuple[float, float, float, int]:
    kw: dict[str, Any] = dict(tp=8, packages=300, metrics_samples=3, log_lines=20_000, env_size=100)
    a = write_capture(root, pd_cluster(n, **kw), T0, name=f"a{n}")
    b = write_capture(root, pd_cluster(n, flags=("--log-level", "debug", "--schedule-policy", "lpm"),
                                       env=(("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "512"),), **kw),
                      T0 + 900, name=f"b{n}", first_pid=9000)
    cold, _ = best(lambda: diff_bundles(a, b), runs=1)
    ours, result = best(lambda: diff_bundles(a, b))
    la, lb = text_of(a), text_of(b)
    base, _text = best(lambda: list(difflib.unified_diff(la, lb, n=0)), runs=1)
    cli = cli_s("diff", str(a), str(b))
    print(f"[diff, {n} hosts] pdforensics diff {ours:.3f} s (best of 3; first call {cold:.3f} s), "
          f"{len(result.changes)} changes; difflib text diff {base:.3f} s (ratio {base / ours:.1f}x); "
          f"`pdforensics diff` fresh process {cli:.3f} s", flush=True)
    return ours, cold, cli, len(result.changes)


def diffs(tmp: Path) -> None:
    small = diff_pair(tmp, 8)
    big = diff_pair(tmp, 32)
    print(f"[diff] 32 / 8 hosts: {big[0] / small[0]:.1f}x for 4x the hosts")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", type=Path, help="also time analyze + report of this real bundle")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ok = analyze_report(Path(tmp), args.bundle)
        stacks()
        diffs(Path(tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
