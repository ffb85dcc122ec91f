"""Session-wide: the suite leaves the machine as it found it (tests/support/hygiene.py); a
module that starts the lab or a daemon is marked `lab` (tests/support/lab_guard.py); and
hypothesis runs under the `suite` profile.

A run that leaves a lab ops account, a sudoers drop-in, a lab process or a listening socket
behind fails, listing what it left."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support import lab_guard
from tests.support.hygiene import Machine, leftovers

# The suite runs on a loaded 2-core machine (CI, and engineers side by side): how long an
# example takes to generate or run says nothing about the code under test, so neither may
# fail a test. Every example is still generated and checked; a test's own @settings wins.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

_start: Machine | None = None


def pytest_configure(config: pytest.Config) -> None:
    lab_guard.install()


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
