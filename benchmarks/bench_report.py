"""Report of a synthetic 8 hosts x 8 GPUs x 16 processes x 3 samples capture: time and size.

Targets (issue #4): renders in under 2 s, the file stays under 3 MB. The baseline, measured
in the same run on the same loaded capture, is the naive report: every parsed view dumped
as JSON into one escaped <pre>.
"""

from __future__ import annotations

import html
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support

from pdforensics.analysis.engine import analysis_json, analyze  # noqa: E402
from pdforensics.report import render, write_report  # noqa: E402
from pdforensics.views.codec import to_jsonable  # noqa: E402
from pdforensics.views.loaded import load_capture  # noqa: E402
from tests.support.pd_capture import SynthSpec, write_synthetic  # noqa: E402

SPEC = SynthSpec(hosts=8, gpus=8, processes=16, samples=3, stack_dumps=2, log_lines=400)
MAX_S, MAX_BYTES = 2.0, 3 * 1024 * 1024


def best(fn: object, runs: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        bundle = write_synthetic(tmp, SPEC)
        raw = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
        load_s, capture = best(lambda: load_capture(bundle))
        analyze_s, result = best(lambda: analysis_json(analyze(capture)))  # type: ignore[arg-type]
        render_s, page = best(lambda: render(capture, result))  # type: ignore[arg-type]
        total_s, out = best(lambda: write_report(bundle))  # load + analysis + render + write
        naive_s, naive = best(lambda: "<!DOCTYPE html><pre>" + html.escape(json.dumps(
            to_jsonable(capture.hosts), default=str)) + "</pre>")  # type: ignore[union-attr]
        size = Path(str(out)).stat().st_size
        naive_size = len(str(naive).encode())
    print(f"capture: {SPEC.hosts} hosts x {SPEC.gpus} GPUs x {SPEC.processes} processes x "
          f"{SPEC.samples} /metrics samples, {len(capture.results)} results, "  # type: ignore[union-attr]
          f"bundle {raw / 1e6:.1f} MB")
    print(f"load_capture:            {load_s:.3f} s")
    print(f"analysis:                {analyze_s:.3f} s")
    print(f"render (template+views): {render_s:.3f} s, {len(str(page).encode()) / 1e6:.2f} MB")
    print(f"write_report end to end: {total_s:.3f} s (target < {MAX_S:g} s)")
    print(f"report.html size:        {size / 1e6:.2f} MB = {size / 1024 / 1024:.2f} MiB "
          f"(target < 3 MiB)")
    print(f"baseline json-in-<pre>:  {naive_s:.3f} s, {naive_size / 1e6:.2f} MB")
    print(f"ratio render / baseline: time {render_s / naive_s:.1f}x, size {size / naive_size:.2f}x")
    ok = total_s < MAX_S and size < MAX_BYTES
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
