"""`stacks` on 10,000 threads across 64 processes: files -> parse -> analyze -> JSON, vs a naive baseline.

The dumps are py-spy text, one file per process (sglang::scheduler_TP<n>), ~156 threads each with
stacks 12-40 frames deep drawn from 40 shapes, so buckets, the prefix tree and classification all
have real work. Rank 37 sits in an all_reduce while its peers wait in recv_requests. The naive
baseline does the same grouping the obvious way: it renders each stack to a string per level and
looks it up in a list of buckets, and it finds outliers by comparing every rank with every other.
Both are checked to agree on the bucket counts. Memo caches are cleared before every run, so each
run is as cold as one CLI invocation. The CLI itself (`pdforensics stacks`, text and --json) is
timed end to end too, interpreter start included.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pdforensics.analysis.stacks import analyze_stacks, load_stack_files, stacks_json
from pdforensics.analysis.stacks_classify import _frame_noise
from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.parsers.frames import ThreadStack
from pdforensics.parsers.pyspy import _parse_frame

PROCESSES = 64
THREADS = 10_000
ODD_RANK = 37

_LIB = ["threading.py", "queue.py", "selectors.py", "socket.py", "zmq/sugar/socket.py",
        "torch/distributed/distributed_c10d.py", "sglang/srt/managers/scheduler.py",
        "sglang/srt/disaggregation/mooncake/conn.py", "concurrent/futures/thread.py",
        "asyncio/base_events.py", "sglang/srt/model_executor/model_runner.py"]
_FN = ["wait", "get", "select", "recv", "recv_pyobj", "all_reduce", "event_loop_normal",
       "transfer_worker", "_worker", "_run_once", "forward", "run", "_bootstrap_inner",
       "_bootstrap", "process_input_requests", "poll", "synchronize", "handle", "step", "loop"]


def _shapes(rng: random.Random, n: int) -> list[list[str]]:
    """``n`` distinct thread stacks (leaf first), as py-spy frame lines."""
    out = []
    for _ in range(n):
        depth = rng.randint(12, 40)
        frames = [f"{rng.choice(['', 'Worker.', 'Scheduler.', 'Thread.'])}{rng.choice(_FN)}"
                  f" ({rng.choice(_LIB)}:{rng.randint(1, 3000)})" for _ in range(depth - 3)]
        frames += ["Thread.run (threading.py:982)", "Thread._bootstrap_inner (threading.py:1045)",
                   "Thread._bootstrap (threading.py:1002)"]
        out.append(frames)
    return out


def make_dumps(directory: Path, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    shapes = _shapes(rng, 40)
    main_ok = ["Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1210)",
               "Scheduler.event_loop_normal (sglang/srt/managers/scheduler.py:980)",
               "run_scheduler_process (sglang/srt/managers/scheduler.py:2790)",
               "BaseProcess.run (multiprocessing/process.py:108)",
               "BaseProcess._bootstrap (multiprocessing/process.py:314)",
               "<module> (<string>:1)"]
    main_odd = ["all_reduce (torch/distributed/distributed_c10d.py:2501)",
                "GroupCoordinator.all_reduce (sglang/srt/distributed/parallel_state.py:480)",
                "Scheduler.event_loop_normal (sglang/srt/managers/scheduler.py:985)"] + main_ok[2:]
    paths = []
    tid = 100_000
    for rank in range(PROCESSES):
        pid = 5000 + rank
        per = THREADS // PROCESSES + (1 if rank < THREADS % PROCESSES else 0)
        lines = [f"Process {pid}: sglang::scheduler_TP{rank}",
                 "Python v3.11.7 (/usr/bin/python3.11)", "",
                 f'Thread {pid} (idle): "MainThread"']
        lines += ["    " + f for f in (main_odd if rank == ODD_RANK else main_ok)]
        for i in range(per - 1):
            tid += 1
            shape = shapes[(i * 7 + (rank if i % 11 == 0 else 0)) % len(shapes)]
            state = "active+gil" if i % 13 == 0 else "idle"
            lines.append(f'Thread {tid} ({state}): "worker-{i}"')
            lines += ["    " + f for f in shape]
        p = directory / f"rank{rank:02d}.txt"
        p.write_text("\n".join(lines) + "\n")
        paths.append(str(p))
    return paths


def ours(paths: list[str]) -> dict[str, object]:
    return stacks_json(analyze_stacks(load_stack_files(paths)))


def _render(t: ThreadStack, level: str) -> str:
    if level == "exact":
        return "\n".join(f"{f.function} {f.file}:{f.line}" for f in t.frames)
    if level == "any_line":
        return "\n".join(f"{f.function} {f.file}" for f in t.frames)
    return "\n".join(f.function for f in t.frames)


def naive(paths: list[str]) -> dict[str, object]:
    """Same inputs, the obvious algorithm: list scans for buckets, all-pairs for outliers."""
    dumps: list[LabelledDump] = list(load_stack_files(paths))
    threads = [(ld.dump.pid, t) for ld in dumps for t in ld.dump.threads]
    result: dict[str, object] = {"threads": len(threads)}
    for level in ("exact", "any_line", "function"):
        buckets: list[tuple[str, list[int | None]]] = []
        for pid, t in threads:
            key = _render(t, level)
            for bkey, members in buckets:
                if bkey == key:
                    members.append(pid)
                    break
            else:
                buckets.append((key, [pid]))
        result[level] = sorted(len(m) for _k, m in buckets)
    by_name: dict[str | None, list[tuple[int | None, ThreadStack]]] = {}
    for pid, t in threads:
        by_name.setdefault(t.name, []).append((pid, t))
    odd = []
    for group in by_name.values():
        for pid, t in group:
            same = sum(1 for _p, u in group if _render(u, "any_line") == _render(t, "any_line"))
            if same * 2 < len(group):
                odd.append(pid)
    result["outliers"] = sorted(p for p in odd if p is not None)
    return result


def _cold() -> None:
    _parse_frame.cache_clear()
    _frame_noise.cache_clear()


def best(fn: Callable[[], object], runs: int = 3) -> tuple[float, float, object]:
    """(best wall s, best CPU s, result) over ``runs`` cold runs."""
    walls, cpus, out = [], [], None
    for _ in range(runs):
        _cold()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus), out


def cli_seconds(paths: list[str], *extra: str) -> float:
    """Wall time of ``pdforensics stacks [extra] FILES`` in a fresh interpreter (best of 3)."""
    argv = [sys.executable, "-c", "from pdforensics.cli import main; main()", "stacks", *extra, *paths]
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_dumps(Path(tmp))
        t_ours, c_ours, rep = best(lambda: ours(paths))
        t_naive, c_naive, base = best(lambda: naive(paths), runs=1)
        t_cli = cli_seconds(paths)
        t_cli_json = cli_seconds(paths, "--json")
    assert isinstance(rep, dict) and isinstance(base, dict)
    assert rep["threads"] == base["threads"] == THREADS, (rep["threads"], base["threads"])
    for level, key in (("exact", "buckets"), ("any_line", "buckets_any_line"),
                       ("function", "buckets_function")):
        counts = sorted(b["count"] for b in rep[key])
        assert counts == base[level], level
    outliers = [o["member"]["pid"] for o in rep["outliers"]]
    assert 5000 + ODD_RANK in outliers and 5000 + ODD_RANK in base["outliers"]
    size = len(json.dumps(rep))
    print(f"stacks in-process (read+parse+analyze+json dict): {THREADS} threads, {PROCESSES} processes: "
          f"{t_ours:.3f} s wall, {c_ours:.3f} s CPU (best of 3, cold), {len(rep['buckets'])} exact "
          f"buckets, {len(rep['outliers'])} outliers, {size / 1e6:.1f} MB JSON")
    print(f"naive baseline (list-scan buckets, all-pairs outliers): {t_naive:.3f} s wall, "
          f"{c_naive:.3f} s CPU")
    print(f"ratio (baseline / ours, CPU): {c_naive / c_ours:.1f}x")
    print(f"CLI end to end, fresh interpreter: `pdforensics stacks` {t_cli:.3f} s, "
          f"`--json` {t_cli_json:.3f} s wall")
    print("target < 1 s (in-process): " + ("met" if t_ours < 1.0 else "MISSED"))
    sys.exit(0 if t_ours < 1.0 else 1)


if __name__ == "__main__":
    main()
