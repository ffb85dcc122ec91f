"""ssh=True: one stock sshd per lab host on 127.0.0.2-4, servers bound to their host address."""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.request

import pytest

from pdforensics.lab import lab_down, lab_up
from tests.support import ports

if sys.version_info >= (3, 11):
    import tomllib
else:  # the project runs on 3.10 too (pyproject's tomli)
    import tomli as tomllib

BASE = ports.block()  # found free at run time
OTHER = ports.block()  # a second lab's block

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(not shutil.which("ssh") or not shutil.which("/usr/sbin/sshd"),
                                 reason="needs openssh-client and openssh-server")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab_dir = tmp_path_factory.mktemp("lab-ssh")
    info = lab_up(lab_dir, ssh=True, base_port=BASE)
    yield info
    lab_down(lab_dir)


def _ssh(lab, address: str, *cmd: str, user: str = "root") -> subprocess.CompletedProcess:
    keys = lab.dir / "keys"
    return subprocess.run(
        ["ssh", "-i", str(keys / "id_ed25519"), "-o", f"UserKnownHostsFile={keys / 'known_hosts'}",
         "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-p", str(lab.ports.ssh),
         f"{user}@{address}", *cmd], capture_output=True, text=True, timeout=20)


def test_ssh_to_each_host(lab):
    for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        res = _ssh(lab, address, "cat", "/proc/loadavg")
        assert res.returncode == 0, res.stderr
        assert len(res.stdout.split()) == 5


def test_servers_bound_to_host_addresses(lab):
    assert lab.url("prefill") == f"http://127.0.0.3:{BASE}"
    assert lab.url("decode") == f"http://127.0.0.4:{BASE + 1}"
    for url in (lab.url("prefill"), lab.url("decode"), lab.url("router")):
        with urllib.request.urlopen(url + "/health", timeout=3) as resp:
            assert resp.status == 200
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{BASE}/health", timeout=2)


def test_cluster_file_ssh(lab):
    data = tomllib.loads(lab.cluster_file.read_text())
    hosts = {h["name"]: h for h in data["hosts"]}
    assert hosts["decode-0"]["address"] == "127.0.0.4" and hosts["decode-0"]["port"] == BASE + 5
    assert hosts["prefill-0"]["identity"] == "keys/id_ed25519"
    assert hosts["router-0"]["user"] == "root"
    known = (lab.dir / "keys" / "known_hosts").read_text()
    assert f"[127.0.0.3]:{BASE + 5} ssh-ed25519 " in known


def test_nvidia_smi_over_ssh(lab):
    data = tomllib.loads(lab.cluster_file.read_text())
    smi = next(h for h in data["hosts"] if h["name"] == "decode-0")["nvidia_smi"]
    res = _ssh(lab, "127.0.0.4", smi, "--query-gpu=index,utilization.gpu", "--format=csv,noheader")
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 4


@pytest.mark.skipif(not shutil.which("sudo"), reason="needs the sudo package")
def test_sudo_user(tmp_path):
    info = lab_up(tmp_path / "sudo", ssh=True, base_port=OTHER, sudo_user="pdfx")
    try:
        res = _ssh(info, "127.0.0.3", "sudo", "-n", "id", "-u", user="pdfx")
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == "0"
        assert 'user = "pdfx"' in info.cluster_file.read_text()
    finally:
        lab_down(info.dir)
