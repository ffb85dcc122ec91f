"""What the lab needs beyond the base install, checked before `lab up` starts anything.

Without setproctitle the stand-in ranks keep their python command lines (as SGLang's do
without it); without py-spy no stack is captured. Either way a healthy lab would not be judged
as one, so `lab up` refuses with one line saying what to install."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from pdforensics.errors import PdforensicsError

INSTALL_HINT = "pip install 'pdforensics[lab]' (or: pip install setproctitle py-spy smg)"


def py_spy_path() -> str | None:
    """py-spy as the lab hosts find it: on PATH, or next to this interpreter."""
    found = shutil.which("py-spy")
    if found:
        return found
    candidate = Path(sys.executable).parent / "py-spy"
    return str(candidate) if candidate.exists() else None


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (set to None)
        return False


def missing_requirements(titles: bool = True) -> list[str]:
    """Names of the lab's missing requirements (setproctitle only matters with titles)."""
    missing = []
    if titles and not _importable("setproctitle"):
        missing.append("setproctitle")
    if py_spy_path() is None:
        missing.append("py-spy")
    return missing


def require_lab_tools(titles: bool = True) -> None:
    """Raise a one-line PdforensicsError naming what to install when something is missing."""
    missing = missing_requirements(titles)
    if missing:
        raise PdforensicsError(f"the lab needs {' and '.join(missing)}, which "
                               f"{'is' if len(missing) == 1 else 'are'} not installed: "
                               f"{INSTALL_HINT}")
