"""Collectors are read-only: a full capture over sshd (py-spy, /proc, logs, nvidia-smi, HTTP)
changes no file of the lab's hosts, except the ones the lab itself keeps writing."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.lab.layout import STANDIN_DIR

pytestmark = [pytest.mark.e2e, pytest.mark.lab]

# written by the running lab, not by a capture: server logs, rank state files (rewritten
# every tick), sshd pid files
LAB_WRITES = ("logs/", "run/", "sshd/")


def _lab_owned(rel: str) -> bool:
    return rel.startswith(LAB_WRITES[:2]) or (rel.startswith(LAB_WRITES[2]) and rel.endswith(".pid"))


def snapshot(root: Path, skip: Callable[[str], bool] = lambda rel: False) -> dict[str, tuple[int, int, str]]:
    """rel path -> (mtime_ns, size, sha256) of every file, and every directory's mtime."""
    out: dict[str, tuple[int, int, str]] = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        d = Path(dirpath)
        rel_dir = d.relative_to(root).as_posix()
        if not skip(rel_dir + "/"):
            out[rel_dir + "/"] = (d.stat().st_mtime_ns, 0, "")
        for name in files:
            p = d / name
            rel = p.relative_to(root).as_posix()
            if skip(rel):
                continue
            st = p.stat()
            out[rel] = (st.st_mtime_ns, st.st_size, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def test_a_capture_changes_nothing_on_the_targets(security_lab: Path, tmp_path: Path) -> None:
    lab_dir = security_lab.parent
    hosts = json.loads((lab_dir / "lab.json").read_text())["hosts"]
    assert (lab_dir / "hosts").is_dir() and len(hosts) == 3
    before_lab = snapshot(lab_dir, _lab_owned)
    before_code = snapshot(STANDIN_DIR)  # the servers' own code, read by py-spy and pip_freeze
    assert any(k.startswith("hosts/") and k.endswith("nvidia-smi") for k in before_lab)
    result = CliRunner().invoke(main, ["capture", "-c", str(security_lab), "-o", str(tmp_path / "out"),
                                       "--json", "--deadline", "45"])
    assert result.exit_code in (0, 3), result.output
    doc = json.loads(result.stdout)
    rows = json.loads((Path(doc["bundle"]) / "manifest.json").read_text())["results"]
    ran = {r["source"] for r in rows if r["exit_status"] == 0}
    assert {"pyspy", "cmdline", "environ", "log_file", "nvidia_smi_query", "metrics", "pip_freeze"} <= ran, ran
    after_lab = snapshot(lab_dir, _lab_owned)
    changed = sorted(k for k in before_lab.keys() | after_lab.keys() if before_lab.get(k) != after_lab.get(k))
    assert changed == [], changed
    assert snapshot(STANDIN_DIR) == before_code
