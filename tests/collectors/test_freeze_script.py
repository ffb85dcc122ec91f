"""The pip_freeze collector's trusted script: same packages as importlib.metadata would list."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys
from pathlib import Path

from pdforensics.collectors.versions import FREEZE_SCRIPT


def _freeze(argv0: str, pid: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["python3", "-I", "-S", "-c", FREEZE_SCRIPT, argv0, str(pid)],
                          capture_output=True, text=True, timeout=30)


def _reference(dirs: list[Path]) -> list[str]:
    """What the importlib.metadata version of the script printed (first of a name wins)."""
    seen: set[str] = set()
    out = []
    dists = sorted(metadata.distributions(path=[str(d) for d in dirs]),
                   key=lambda d: (d.metadata["Name"] or "").lower())
    for d in dists:
        name = d.metadata["Name"]
        if name and name.lower() not in seen:
            seen.add(name.lower())
            out.append(f"{name}=={d.version}")
    return out


def _dist(site: Path, dirname: str, name: str, version: str, egg: str | None = None) -> None:
    body = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x: y\n\nName: not-this\n"
    if egg == "file":
        (site / dirname).write_text(body)
        return
    d = site / dirname
    d.mkdir(parents=True)
    (d / ("PKG-INFO" if egg == "dir" else "METADATA")).write_text(body)


def test_synthetic_prefix_matches_importlib_metadata(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    local = tmp_path / "local" / "lib" / "python3.11" / "dist-packages"
    site.mkdir(parents=True)
    local.mkdir(parents=True)
    _dist(site, "sglang-0.5.23.dist-info", "sglang", "0.5.23")
    _dist(site, "nvidia_ml_py-12.535.dist-info", "nvidia-ml-py", "12.535")
    _dist(site, "Old_Pkg-1.0-py3.11.egg-info", "Old-Pkg", "1.0", egg="dir")
    _dist(site, "single-2.0.egg-info", "single", "2.0", egg="file")
    _dist(local, "sglang-0.4.0.dist-info", "sglang", "0.4.0")  # shadowed by site-packages
    _dist(local, "zeta-3.dist-info", "Zeta", "3")
    (site / "notapackage").mkdir()
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "python"
    exe.write_text("")
    got = _freeze(str(exe), os.getpid())
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == _reference([site, local])
    assert "sglang==0.5.23" in got.stdout.splitlines()


def test_this_interpreter_matches_importlib_metadata() -> None:
    prefix = Path(sys.prefix)
    dirs = sorted(prefix.glob("lib/python3*/site-packages"))
    got = _freeze(str(prefix / "bin" / "python"), os.getpid())
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == _reference(dirs)
    assert any(line.startswith("click==") for line in got.stdout.splitlines())


def test_no_site_packages_is_an_error(tmp_path: Path) -> None:
    got = _freeze(str(tmp_path / "bin" / "python"), os.getpid())
    assert got.returncode != 0
    assert "no site-packages" in got.stderr
