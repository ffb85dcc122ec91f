"""A real single-node Slurm (munged, slurmctld, slurmd) for this session's Slurm tests, and
the lab running as a batch job on it. Run these under the e2e lock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.lab.slurm_job import SlurmLab, slurm_lab_down, slurm_lab_up
from tests.support import ports
from tests.support.slurm import SlurmCluster, SlurmUnavailable


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Slurm up and its node idle; SLURM_CONF points every client (and pdforensics) at it."""
    try:
        cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm"))
    except SlurmUnavailable as exc:
        pytest.skip(f"no Slurm here: {exc}")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        cluster.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def start_lab(slurm: SlurmCluster, lab_dir: Path) -> SlurmLab:
    """The lab as a batch job on this Slurm (healthy, ports from the allocator)."""
    assert os.environ.get("SLURM_CONF") == str(slurm.conf)
    return slurm_lab_up(lab_dir, base_port=ports.block(addresses=("127.0.0.1",)))


@pytest.fixture(scope="module")
def slurm_lab(slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    lab_dir = tmp_path_factory.mktemp("slurmlab")
    lab = start_lab(slurm, lab_dir)
    try:
        yield lab
    finally:
        slurm_lab_down(lab_dir)
