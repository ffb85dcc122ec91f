"""Lab hooks that tests arm beside the fault, and the state the stand-in publishes for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pdforensics.lab.layout import paths

#: /configure_logging serves its first call and refuses (HTTP 500) every later one
CONFIGURE_LOGGING_ONCE = "configure-logging-once"
HOOKS = (CONFIGURE_LOGGING_ONCE,)


def set_hook(lab_dir: Path, name: str, armed: bool) -> None:
    """Arm or disarm a hook; disarming also forgets what it counted."""
    if name not in HOOKS:
        raise ValueError(f"unknown lab hook {name!r}")
    marker = Path(lab_dir) / "hooks" / name
    if armed:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        return
    marker.unlink(missing_ok=True)
    for served in paths(Path(lab_dir))["run"].glob("*/configure_logging.served"):
        served.unlink(missing_ok=True)


def request_logging(lab_dir: Path, role: str) -> dict[str, Any] | None:
    """The request logger's setting a lab server runs with now (None before it started)."""
    try:
        data = json.loads((paths(Path(lab_dir))["run"] / role / "request_logging.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
