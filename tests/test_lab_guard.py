"""The guard behind the `lab` marker (tests/support/lab_guard.py): what it calls a lab start,
and that an armed guard refuses one before anything runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import lab_guard


@pytest.mark.parametrize("argv", [
    ["/usr/sbin/sshd", "-D", "-f", "x"],
    ["timeout", "60", "chromium", "--headless"],
    [sys.executable, "-m", "sglang.launch_server", "--port", "1"],
    ["/venv/bin/smg", "launch"],
    "prometheus --config.file=x",
    [sys.executable, "-m", "pdforensics", "lab", "up", "--dir", "x"],
    ["/usr/sbin/slurmctld", "-D"],
])
def test_lab_starts_are_named(argv: list[str] | str) -> None:
    assert lab_guard.lab_program(argv) is not None


@pytest.mark.parametrize("argv", [
    ["ssh", "-p", "22", "host", "true"], ["py-spy", "dump", "--pid", "1"], ["promtool", "test", "rules", "x"],
    [sys.executable, "-m", "pdforensics", "lab", "down"], ["ps", "-eww"], b"curl http://127.0.0.1/",
])
def test_other_commands_are_not(argv: list[str] | str | bytes) -> None:
    assert lab_guard.lab_program(argv) is None


def test_an_armed_guard_refuses_before_anything_starts(tmp_path: object) -> None:
    lab_guard.arm(True)
    try:
        with pytest.raises(lab_guard.UnmarkedLabError, match="pytest.mark.lab"):
            subprocess.run(["smg", "launch", "--port", "1"], check=False)
    finally:
        lab_guard.arm(False)
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0
