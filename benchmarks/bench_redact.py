"""Redaction throughput on real-format outputs (metrics, journal, ps, py-spy), 8 MB each:
Redactor.text (every detector) vs one pass of a single hf_ token regex, same run, CPU time.

The baseline is the cheapest scrub imaginable; the ratio says what the full detector set
costs on top of it per byte written into a bundle.

Then (issue 32) hostile inputs at 25 KB and 100 KB: a linear redactor takes ~4x the time for
4x the text (a quadratic one ~16x; "> 20 s" means it was stopped there), and the second
opinion of `verify --secrets` (detect-secrets' rules) in MB/s on the same samples."""

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


HOSTILE = {
    "padded header": lambda n: b"x-api-key:" + b" " * n + b"\n",
    "k=v run": lambda n: b"a=" * (n // 2),
    "flag run": lambda n: b"--api-key " * (n // 10),
    "json keys": lambda n: b'"token": "' * (n // 10),
    "yaml keys": lambda n: b"password: a" * (n // 11),
    "jwt heads": lambda n: b"eyJ" * (n // 3),
    "pem heads": lambda n: b"-----BEGIN PRIVATE KEY-----" * (n // 27),
    "quoted env": lambda n: b"\"API_KEY=" * (n // 9),
}


def _bounded(fn: Callable[[], object], limit: int = 20) -> float | None:
    import signal

    def stop(*_a: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(limit)
    try:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0
    except TimeoutError:
        return None
    finally:
        signal.alarm(0)


def _fmt(s: float | None) -> str:
    return "> 20 s" if s is None else f"{s:6.3f} s"


def hostile() -> None:
    for name, make in HOSTILE.items():
        small = _bounded(lambda m=make: Redactor(b"bench").text(m(25_000)))  # type: ignore[misc]
        large = _bounded(lambda m=make: Redactor(b"bench").text(m(100_000)))  # type: ignore[misc]
        ratio = f"{large / max(small, 1e-4):5.1f}x" if small is not None and large is not None else "  n/a"
        print(f"hostile {name:14} 25 KB {_fmt(small)}  100 KB {_fmt(large)}  (4x the text: {ratio} the time)")


def second_opinion() -> None:
    try:
        from pdforensics.bundle.second_opinion import Budget, opinions
    except ImportError:
        print("second opinion: not in this version")
        return
    for name in SAMPLES:
        text = (DATA / name).read_bytes()
        data = text * max(1, (1 << 20) // len(text))
        cpu = best(lambda d=data: opinions(d, Budget(left=1e9)))  # type: ignore[misc]
        print(f"second opinion {name:34} {len(data) / 1e6:4.1f} MB  {cpu:6.2f} s CPU "
              f"({len(data) / 1e6 / cpu:5.2f} MB/s)")


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
    hostile()
    second_opinion()


if __name__ == "__main__":
    main()
