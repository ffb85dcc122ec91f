"""The security tests' SSH lab (ports 44100-44105) with one secret of every kind planted."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.security.planted_secrets as ps
from pdforensics.lab import lab_down, lab_up
from tests.support import ports

BASE_PORT = ports.block()  # found free at run time


@pytest.fixture(scope="session")
def security_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The lab over real sshd (root logins); yields its cluster file."""
    for tool in ("sshd", "ssh-keygen", "curl", "ss"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            pytest.fail(f"{tool} is missing: run the README's test command, which installs it")
    lab_dir = tmp_path_factory.mktemp("seclab")
    info = lab_up(lab_dir, fault="healthy", ssh=True, base_port=BASE_PORT,
                  secret_env={**ps.ENV_BY_NAME, **ps.ENV_BY_SHAPE, **ps.ENV_PLAIN, **ps.ENV_KEPT},
                  extra_args={role: list(ps.FLAGS) for role in ("prefill", "decode", "router")},
                  secret_log=ps.LOG_LINES, secret_labels=ps.LABELS,
                  # the stand-in router: its command line and environment carry the planted
                  # flags and env vars (smg rejects unknown flags and its title hides both)
                  router="standin")
    try:
        yield info.cluster_file
    finally:
        lab_down(lab_dir)
