"""Lab-only hooks beside the faults: the request logger's state, published for tests (SGLang
has no endpoint that reads it back), and a switch that makes /configure_logging fail after
its first change (a restore that fails: `capture --request-log`'s error path)."""

from __future__ import annotations

import json
import os

from pdfx_lab_runtime import lab_dir

#: a file of this name in the lab's hooks/ dir arms the hook (pdforensics.lab.hooks)
CONFIGURE_LOGGING_ONCE = "configure-logging-once"


def _logging_path(role: str) -> str:
    return os.path.join(lab_dir(), "run", role, "request_logging.json")


def publish_logging(role: str, logger) -> None:
    """Write the request logger's current setting (atomically) for the lab's readers."""
    path = _logging_path(role)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"log_requests": bool(logger.log_requests),
                   "log_requests_level": int(logger.log_requests_level)}, fh)
    os.replace(tmp, path)


def configure_logging_refused(role: str) -> bool:
    """With the hook armed, the first /configure_logging of this server is served and every
    later one is refused."""
    marker = os.path.join(lab_dir(), "hooks", CONFIGURE_LOGGING_ONCE)
    if not os.path.exists(marker):
        return False
    served = os.path.join(lab_dir(), "run", role, "configure_logging.served")
    if os.path.exists(served):
        return True
    os.makedirs(os.path.dirname(served), exist_ok=True)
    open(served, "w").close()
    return False
