"""Session-wide: the suite leaves the machine as it found it (tests/support/hygiene.py).

A run that leaves a lab ops account, a sudoers drop-in, a lab process or a listening socket
behind fails, listing what it left."""

from __future__ import annotations

import pytest

from tests.support.hygiene import Machine, leftovers

_start: Machine | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    global _start
    _start = Machine.now()


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
