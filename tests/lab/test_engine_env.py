"""The real engine lab's environment cache (issue 34), without building 7 GB: reuse of a cache
whose stamp matches, a rebuild when the pins change, and the one-line errors naming what is
missing. The build itself runs in the real_sglang tier (tests/real_sglang/)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.errors import PdforensicsError
from pdforensics.lab.engine import env as engine_env
from pdforensics.lab.engine.env import ensure_engine_env


def _fake_cache(root: Path, fingerprint: str) -> None:
    (root / "venv" / "bin").mkdir(parents=True)
    (root / "venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (root / "model").mkdir()
    (root / "ready.json").write_text(json.dumps({"fingerprint": fingerprint, "built_s": 201.5}))


def test_a_matching_cache_is_reused_with_one_line(tmp_path: Path) -> None:
    _fake_cache(tmp_path, engine_env._fingerprint())
    lines: list[str] = []
    env = ensure_engine_env(tmp_path, lines.append)
    assert env.reused and env.built_s == 201.5 and env.root == tmp_path.resolve()
    assert lines == [f"engine env: reusing {tmp_path.resolve()} (built in 201.5 s)"]
    assert env.python == tmp_path.resolve() / "venv" / "bin" / "python"


def test_changed_pins_mean_a_rebuild_and_a_missing_python_is_named(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A stamp from other pins is not reused; the build's first missing prerequisite (here
    python3.11, hidden from PATH) is one error line naming it, and no stamp is left."""
    _fake_cache(tmp_path, "0" * 16)
    (tmp_path / "venv" / "bin" / "python").unlink()
    monkeypatch.setattr(engine_env, "missing_system_libs", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    lines: list[str] = []
    with pytest.raises(PdforensicsError) as err:
        ensure_engine_env(tmp_path, lines.append)
    assert "python3.11" in str(err.value) and "\n" not in str(err.value)
    assert lines[0].startswith(f"engine env: building in {tmp_path.resolve()}")
    assert not (tmp_path / "ready.json").exists()


def test_missing_system_libraries_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_env, "missing_system_libs", lambda: ["libibverbs1", "librdmacm1"])
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # not root: no apt-get for us
    with pytest.raises(PdforensicsError) as err:
        ensure_engine_env(tmp_path, lambda _line: None)
    assert str(err.value) == ("the engine lab needs Debian's libibverbs1 librdmacm1 (Mooncake loads them): "
                              "apt-get install libibverbs1 librdmacm1")


def test_system_library_check_reads_ldconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `ldconfig -p` lists is present; the rest is named by its Debian package."""
    fake = tmp_path / "ldconfig"
    fake.write_text("#!/bin/sh\necho '1 libs found in cache'\n"
                    "echo '\tlibnuma.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnuma.so.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert engine_env.missing_system_libs() == ["libibverbs1", "librdmacm1"]


def test_default_root_is_outside_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(engine_env.ROOT_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert engine_env.default_root() == (tmp_path / "pdforensics" / "engine" / "sglang-0.5.23").resolve()
    monkeypatch.setenv(engine_env.ROOT_ENV, str(tmp_path / "elsewhere"))
    assert engine_env.default_root() == (tmp_path / "elsewhere").resolve()


def test_cli_refuses_engine_with_standin_only_options(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["lab", "up", "--engine", "sglang", "--slurm", "--dir", str(tmp_path)])
    assert out.exit_code == 2 and "--engine sglang runs with smg" in out.output
    out = CliRunner().invoke(main, ["lab", "up", "--engine", "sglang", "--tp", "3", "--dir", str(tmp_path)])
    assert out.exit_code == 2
