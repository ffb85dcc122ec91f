"""The lab's ops user is made per lab and gone after `lab down`: account, key, sudoers drop-in."""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

import pytest

from pdforensics.lab import lab_down, lab_up
from pdforensics.lab.sudo_user import RECORD, sudoers_path
from tests.support import ports

USER = "pdfxtest"  # not used by any other test: this lab creates it


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


@pytest.mark.e2e
@pytest.mark.lab
def test_lab_down_removes_the_user_and_sudoers_it_created(tmp_path: Path) -> None:
    assert not _exists(USER), f"{USER} is left over from an earlier run"
    lab_dir = tmp_path / "lab"
    lab_up(lab_dir, ssh=True, base_port=ports.block(), sudo_user=USER)
    try:
        drop_in = sudoers_path(lab_dir)
        assert _exists(USER) and drop_in.read_text() == f"{USER} ALL=(ALL) NOPASSWD:ALL\n"
        listed = subprocess.run(["sudo", "-n", "-l", "-U", USER], capture_output=True, text=True)
        assert "NOPASSWD: ALL" in listed.stdout
    finally:
        lab_down(lab_dir)
    assert not _exists(USER)
    assert not drop_in.exists() and not (lab_dir / RECORD).exists()
    lab_down(lab_dir)  # idempotent
