"""Where the suite's time goes: `--durations-file PATH` writes every test's time (setup, call
and teardown added up) and each module's total, slowest first, with the wall time of the run
and the number of workers (scripts/test.sh writes test-results/durations.txt).

Under pytest-xdist a module's total is the sum of its tests' times, whichever worker ran
them; the wall time of the run is shorter than the sum when workers overlap."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest


class Durations:
    """Collects the reports that reach this process (the controller's, under xdist)."""

    def __init__(self, path: Path):
        self.path = path
        self.started = time.monotonic()
        self.tests: dict[str, float] = defaultdict(float)
        self.workers: dict[str, str] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.tests[report.nodeid] += report.duration
        worker = getattr(report, "worker_id", None) or getattr(getattr(report, "node", None), "workerid", None)
        if worker:
            self.workers[report.nodeid] = str(worker)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(render(self.tests, self.workers, time.monotonic() - self.started,
                                    int(exitstatus)))


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def render(tests: dict[str, float], workers: dict[str, str], wall_s: float, exitstatus: int) -> str:
    modules: dict[str, float] = defaultdict(float)
    for nodeid, seconds in tests.items():
        modules[module_of(nodeid)] += seconds
    total = sum(tests.values())
    lines = [f"# wall {wall_s:.1f} s, test time {total:.1f} s, {len(tests)} tests, "
             f"{len(set(workers.values())) or 1} worker(s), exit status {exitstatus}",
             "", "## modules (seconds, tests)"]
    counts: dict[str, int] = defaultdict(int)
    for nodeid in tests:
        counts[module_of(nodeid)] += 1
    lines += [f"{s:9.2f} {counts[m]:5d}  {m}" for m, s in sorted(modules.items(), key=lambda x: -x[1])]
    lines += ["", "## tests (seconds, worker)"]
    lines += [f"{s:9.2f} {workers.get(n, '-'):>4}  {n}" for n, s in sorted(tests.items(), key=lambda x: -x[1])]
    return "\n".join(lines) + "\n"
