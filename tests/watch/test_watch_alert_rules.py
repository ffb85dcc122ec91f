"""examples/prometheus: the alert rules pass promtool's checks and their unit tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "prometheus"


def promtool(*args: str, cwd: Path = EXAMPLES) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.fail("promtool is missing: run scripts/setup.sh --test (Debian package prometheus)")
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_rules_are_valid() -> None:
    res = promtool("check", "rules", "pdforensics-alerts.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "4 rules found" in res.stdout


def test_rule_unit_tests_pass() -> None:
    res = promtool("test", "rules", "pdforensics-alerts.test.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_unit_tests_catch_a_broken_rule(tmp_path: Path) -> None:
    """The unit tests are not vacuous: drop the `for: 1m` and they fail."""
    rules = (EXAMPLES / "pdforensics-alerts.yml").read_text()
    assert rules.count("        for: 1m\n") == 1
    (tmp_path / "pdforensics-alerts.yml").write_text(rules.replace("        for: 1m\n", ""))
    shutil.copy(EXAMPLES / "pdforensics-alerts.test.yml", tmp_path)
    res = promtool("test", "rules", "pdforensics-alerts.test.yml", cwd=tmp_path)
    assert res.returncode != 0
    assert "SGLangWedgeSuspected" in res.stdout + res.stderr


def test_scrape_config_is_valid() -> None:
    res = promtool("check", "config", "prometheus.yml")
    assert res.returncode == 0, res.stdout + res.stderr
