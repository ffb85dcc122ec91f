"""Redaction throughput on real-format outputs (metrics, journal, ps, py-spy), 8 MB each:
Redactor.text (every detector) vs one pass of a single hf_ token regex, same run, CPU time.

The baseline is the cheapest scrub imaginable; the ratio says what the full detector set
costs on top of it per byte written into a bundle."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from pdforensics.redact.redactor import Redactor

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SAMPLES = ("prom_sglang_decode_wedged.txt", "log_journal_pd_wedge.txt", "proc_ps.txt", "pyspy_locals.txt")
SIZE = 8 << 20
ONE = re.compile(rb"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{16,}")


def best(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    r = Redactor(b"bench")
    for name in SAMPLES:
        text = (DATA / name).read_bytes()
        data = text * max(1, SIZE // len(text))
        ours = best(lambda d=data: r.text(d))  # type: ignore[misc]
        base = best(lambda d=data: ONE.sub(b"x", d))  # type: ignore[misc]
        mb = len(data) / 1e6
        print(f"{name:34} {mb:5.1f} MB  Redactor.text {ours:6.2f} s CPU ({mb / ours:5.1f} MB/s)  "
              f"single regex {base:5.2f} s  ratio (ours / baseline) {ours / base:4.1f}x")


if __name__ == "__main__":
    main()
