"""An SSH lab (three loopback sshd hosts) shared by the end-to-end tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.lab import lab_down, lab_up
from tests.support import ports

PLANTED_TOKEN = "hf_PlantedSecretValue0123456789abcdef"
BASE_PORT = ports.block()  # this session's ssh lab: 6 free ports found at run time


def _needs(tool: str) -> None:
    if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
        pytest.fail(f"{tool} is missing: run the README's test command, which installs it")


@pytest.fixture(scope="session")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The lab over real sshd, with a non-root sudo user and a planted secret."""
    for tool in ("sshd", "ssh-keygen", "sudo", "curl", "ss"):
        _needs(tool)
    lab_dir = tmp_path_factory.mktemp("sshlab")
    info = lab_up(lab_dir, fault="healthy", ssh=True, base_port=BASE_PORT, sudo_user="pdfx",
                  secret_env={"HF_TOKEN": PLANTED_TOKEN})
    try:
        yield info.cluster_file
    finally:
        lab_down(lab_dir)


def cluster_as(cluster_file: Path, user: str, out: Path) -> Path:
    """A copy of the lab's cluster file logging in as another user."""
    text = cluster_file.read_text()
    if user == "root":
        text = text.replace('user = "pdfx"', 'user = "root"').replace("sudo = true\n", "")
    # keep relative identity/known_hosts paths valid
    text = text.replace('"keys/', f'"{cluster_file.parent}/keys/')
    out.write_text(text)
    return out
