"""The lab fault `clock-skew`: one host whose clock runs ahead of the others'.

What a real skewed host shows, the lab host shows the same way:
- every command run through that host's sshd sees the shifted clock: its sshd sets
  ``LD_PRELOAD`` to libfaketime with ``FAKETIME_TIMESTAMP_FILE`` (``SetEnv``), and the file says
  ``+0`` normally, ``+90`` under the fault (re-read at every clock call: ``FAKETIME_NO_CACHE``).
  Statically linked py-spy ignores LD_PRELOAD; ``ps`` takes elapsed times from /proc/uptime,
  which faketime does not move; sudo drops LD_PRELOAD. So only what reads the wall clock moves.
- the stand-in server of that host stamps its log lines with the same shift
  (pdfx_lab_runtime.log reads the same file), as a server on a skewed host would.
Without libfaketime the host's commands see the true clock (`faketime_ready` says so). A lab
without ssh cannot shift a host's clock: there the fault changes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
SKEWED_HOST = "decode-0"
SKEW_S = 90
FAULT = "clock-skew"


def faketime_ready() -> bool:
    """True when libfaketime is installed (apt-get install faketime)."""
    return FAKETIME_LIB.exists()


def faketime_file(lab_dir: Path, host: str) -> Path:
    """The file holding a host's clock shift in libfaketime's syntax (``+90``: 90 s ahead)."""
    return Path(lab_dir) / f"faketime-{host}"


def sshd_lines(lab_dir: Path, host: str) -> str:
    """sshd_config lines that put the host's sessions on its (shifted) clock; "" for the others."""
    if host != SKEWED_HOST or not faketime_ready():
        return ""
    env = {"LD_PRELOAD": str(FAKETIME_LIB),
           "FAKETIME_TIMESTAMP_FILE": str(faketime_file(lab_dir, host)),
           "FAKETIME_NO_CACHE": "1"}
    return "SetEnv " + " ".join(f'"{k}={v}"' for k, v in env.items()) + "\n"


def write_clock(lab_dir: Path, fault: str, ssh: bool) -> None:
    """The skewed host's shift for this fault: +SKEW_S under clock-skew, +0 otherwise. A lab
    without ssh has no file (its hosts are this machine: one clock, its log stamps unshifted)."""
    path = faketime_file(lab_dir, SKEWED_HOST)
    if not ssh:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(f"+{SKEW_S if fault == FAULT else 0}\n")
    os.replace(tmp, path)
