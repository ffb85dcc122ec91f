"""`lab up` refuses to start, with one line saying what to install, when setproctitle or py-spy
is missing (issue #14: without setproctitle a healthy lab was judged DEGRADED, its ranks not
found; without py-spy no stack is captured)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pdforensics.lab.requirements import missing_requirements

VENV = Path(sys.prefix)


def lab_up(tmp_path: Path, prelude: str, python: str = sys.executable,
           env: dict[str, str] | None = None, *args: str) -> subprocess.CompletedProcess[str]:
    code = (f"{prelude}\nimport sys\nfrom pdforensics.cli import main\n"
            f"main(['lab', 'up', '--dir', {str(tmp_path / 'lab')!r}, '--base-port', '47500'"
            f"{''.join(', ' + repr(a) for a in args)}])")
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60,
                          env=env, cwd=tmp_path)


def test_everything_installed_here() -> None:
    assert missing_requirements() == []


def test_missing_setproctitle_is_refused_in_one_line(tmp_path: Path) -> None:
    res = lab_up(tmp_path, "import sys; sys.modules['setproctitle'] = None")
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install" in lines[0], lines
    assert "the lab needs setproctitle, which is not installed" in lines[0], lines
    assert not (tmp_path / "lab" / "lab.json").exists() and not (tmp_path / "lab" / "logs").exists()


def test_without_titles_setproctitle_is_not_needed() -> None:
    import importlib.util

    assert importlib.util.find_spec("setproctitle") is not None  # this venv has it
    assert missing_requirements(titles=False) == []


def test_missing_py_spy_is_refused_in_one_line(tmp_path: Path) -> None:
    """An interpreter whose bin/ holds no py-spy and a PATH without one: a plain install."""
    plain = tmp_path / "plain"
    (plain / "bin").mkdir(parents=True)
    (plain / "pyvenv.cfg").write_text((VENV / "pyvenv.cfg").read_text())
    (plain / "bin" / "python").symlink_to(os.path.realpath(VENV / "bin" / "python"))
    (plain / "lib").symlink_to(VENV / "lib")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if any(Path(d, "py-spy").exists() for d in env["PATH"].split(":")):
        import pytest

        pytest.skip("py-spy is installed system-wide here")
    res = lab_up(tmp_path, "", str(plain / "bin" / "python"), env)
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install" in lines[0], lines
    assert "the lab needs py-spy, which is not installed" in lines[0], lines
    assert not (tmp_path / "lab" / "lab.json").exists()
