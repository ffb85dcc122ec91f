"""Session-wide: the suite leaves the machine as it found it (tests/support/hygiene.py); a
module that starts the lab or a daemon is marked `lab` (tests/support/lab_guard.py);
hypothesis runs under the `suite` profile; `--durations-file` writes where the time went
(tests/support/durations.py).

Under pytest-xdist (scripts/test.sh: `-n 3 --dist loadfile --no-loadscope-reorder`) the
tests of one module stay on one worker, in their order (a lab module's tests share its lab
and switch its faults in turn); modules are handed out in the order this file sorts them:
the `slow` ones first, the other lab modules next, the rest last, to whichever worker is
free. (`--dist loadgroup` cannot be used: pytest-xdist 3.8 renames node ids in a way that
pytest 9 ignores, so its groups are silently not kept.)

A run that leaves a lab ops account, a sudoers drop-in, a lab process or a listening socket
behind fails, listing what it left."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support import lab_guard
from tests.support.durations import Durations
from tests.support.hygiene import Machine, leftovers

# The suite runs on a loaded 2-core machine (CI, and engineers side by side): how long an
# example takes to generate or run says nothing about the code under test, so neither may
# fail a test. Every example is still generated and checked; a test's own @settings wins.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

_start: Machine | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--durations-file", default=None, metavar="PATH",
                     help="write each test's and each module's time, slowest first, to PATH")


def pytest_configure(config: pytest.Config) -> None:
    lab_guard.install()
    if hasattr(config, "workerinput"):  # an xdist worker: keep its own /proc/PID/environ
        _keep_environ()
    path = config.getoption("--durations-file")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Durations(Path(path)), "pdfx-durations")


def _keep_environ() -> None:
    """pytest-xdist titles each worker with the test it runs (setproctitle), which on Linux
    writes a long title over the process's environ block: /proc/PID/environ, which the
    transport tests read from their own process, would hold the title. setproctitle reads
    SPT_NOENV once, at its first call: set for that call only, titles stay within argv."""
    if "SPT_NOENV" in os.environ:
        return
    os.environ["SPT_NOENV"] = "1"
    try:
        import setproctitle

        setproctitle.getproctitle()
    except ImportError:
        pass
    finally:
        del os.environ["SPT_NOENV"]


def _rank(item: pytest.Item) -> int:
    if item.get_closest_marker("slow") is not None:
        return 0
    return 1 if item.get_closest_marker("lab") is not None else 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow modules first, then the lab modules, then the rest; order kept within a module."""
    first: dict[str, int] = {}  # module -> the rank of its first (most urgent) test
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        first[module] = min(first.get(module, 2), _rank(item))
    items.sort(key=lambda item: first[item.nodeid.split("::", 1)[0]])  # stable


def pytest_sessionstart(session: pytest.Session) -> None:
    global _start
    _start = Machine.now()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    lab_guard.arm(item.get_closest_marker("lab") is None)
    try:
        return (yield)
    finally:
        lab_guard.arm(False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    lab_guard.arm(item.get_closest_marker("lab") is None)
    try:
        return (yield)
    finally:
        lab_guard.arm(False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    if _start is None or factory is None or hasattr(session.config, "workerinput"):
        return
    problems = leftovers(_start, factory.getbasetemp())
    if not problems:
        return
    writer = session.config.get_terminal_writer()
    writer.line("")
    writer.sep("=", "the test session left the machine changed", red=True)
    for line in problems:
        writer.line(line, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
