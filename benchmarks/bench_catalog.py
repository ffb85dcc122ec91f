"""Time `build_catalog` on the pinned sglang wheel (target < 10 s).

Baseline, measured in the same run: the naive approach, i.e. read every .py file of
the wheel with zipfile and ast.parse all of them. Run:
    .venv/bin/python benchmarks/bench_catalog.py [WHEEL]
"""

from __future__ import annotations

import ast
import sys
import time
import zipfile
from pathlib import Path

from pdforensics.catalog import build_catalog
from pdforensics.catalog.fetch import fetch_wheel
from pdforensics.catalog.load import PINNED_VERSION

TARGET_S = 10.0


def naive(wheel: Path) -> int:
    parsed = 0
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.endswith(".py"):
                try:
                    ast.parse(zf.read(name))
                    parsed += 1
                except (SyntaxError, ValueError):
                    pass
    return parsed


def best_of(n: int, fn: object, *args: object) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else fetch_wheel(PINNED_VERSION)
    cat = build_catalog(wheel)
    build_s = best_of(3, build_catalog, wheel)
    naive_s = best_of(1, naive, wheel)
    print(f"wheel: {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
    print(f"catalog: sglang {cat.version}: {len(cat.flags)} flags, {len(cat.env_vars)} env vars, "
          f"{len(cat.metrics)} metrics")
    print(f"build_catalog: {build_s:.2f} s (best of 3; target < {TARGET_S:.0f} s)")
    print(f"baseline zipfile + ast.parse of every .py: {naive_s:.2f} s")
    print(f"ratio build/baseline: {build_s / naive_s:.2f}")
    return 0 if build_s < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
