"""Download (never install) an sglang wheel into the pdforensics cache with pip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pdforensics.errors import PdforensicsError

# The tags of the wheel the shipped catalog was built from, so every host fetches
# the same file whatever its own Python is.
WHEEL_TAGS = ("--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
              "--platform", "manylinux_2_34_x86_64")


def cache_dir() -> Path:
    """`$PDFORENSICS_CACHE/wheels`, default `~/.cache/pdforensics/wheels`."""
    base = os.environ.get("PDFORENSICS_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "pdforensics"
    return root / "wheels"


def cached_wheel(version: str, where: Path | None = None) -> Path | None:
    found = sorted((where or cache_dir()).glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


def fetch_wheel(version: str, where: Path | None = None, timeout: float = 300) -> Path:
    """The cached wheel of sglang `version`, downloading it with `pip download --no-deps`."""
    dest = where or cache_dir()
    hit = cached_wheel(version, dest)
    if hit is not None:
        return hit
    dest.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", f"sglang=={version}", "--no-deps",
            "--only-binary=:all:", *WHEEL_TAGS, "-d", str(dest), "--quiet",
            "--disable-pip-version-check"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PdforensicsError(f"pip download sglang=={version} failed: {exc}") from exc
    hit = cached_wheel(version, dest)
    if proc.returncode != 0 or hit is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        last = next((ln for ln in reversed(tail) if not ln.startswith("WARNING")), "")
        raise PdforensicsError(
            f"pip download sglang=={version} failed (exit {proc.returncode}): {last}")
    return hit
