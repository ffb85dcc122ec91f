"""Triage of loose files starts fast: it never imports paramiko (the SSH transport costs a
tenth of a second and more to import, and reading files opens no connection)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LOG = Path(__file__).resolve().parent.parent / "data" / "field" / "nccl" / \
    "nccl1637-rtx5090-maxsharedmem.log"

_PROBE = """
import sys
from click.testing import CliRunner
from pdforensics.cli import main
res = CliRunner().invoke(main, ["triage", sys.argv[1]])
print(res.exit_code, "paramiko" in sys.modules)
"""


def test_triage_does_not_import_paramiko() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(LOG)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["0", "False"], out


def test_the_ssh_transport_is_still_there_when_asked_for() -> None:
    from pdforensics import transport
    from pdforensics.transport.ssh import SshTransport

    assert transport.SshTransport is SshTransport
