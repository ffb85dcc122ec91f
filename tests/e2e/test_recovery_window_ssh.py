"""The 3 a.m. loop over real sshd: wedge -> capture WEDGED with the right since; recover ->
after the evidence window, capture and snapshot read HEALTHY (the wedge's log lines are
history, shown and not judged); `diff` takes that snapshot as the baseline.

A lab of its own (fresh servers, so the default window starts at their start and no earlier
incident of another test is inside it)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.lab import LabInfo, lab_down, lab_up, set_fault
from tests.support import ports

pytestmark = [pytest.mark.e2e, pytest.mark.lab]

WEDGE_S = 10.0  # the wedge holds this long before the capture
WINDOW = "20s"  # the evidence window after the recovery ...
SETTLE_S = 26.0  # ... and how long we wait after it (the window then starts after the recovery)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabInfo]:
    for tool in ("sshd", "ssh-keygen", "curl"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            pytest.fail(f"{tool} is missing: run the README's test command, which installs it")
    d = tmp_path_factory.mktemp("recoverylab")
    info = lab_up(d, fault="healthy", ssh=True, base_port=ports.block())
    try:
        yield info
    finally:
        lab_down(d)


def run(*args: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, list(args))
    assert res.stdout.strip().startswith("{"), res.output
    return res.exit_code, json.loads(res.stdout)


def keep(path: str, name: str) -> None:
    """The report, for the record (docs/report.md's screenshots are taken from such pages)."""
    where = os.environ.get("PDFORENSICS_TEST_ARTIFACTS")
    if where:
        out = Path(where) / "recovery"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, out / name)


def test_wedge_recover_healthy_and_the_baseline(lab: LabInfo, tmp_path: Path) -> None:
    cluster, store = str(lab.cluster_file), str(tmp_path / "store")
    time.sleep(3.0)
    t_fault = time.time()
    set_fault(lab.dir, "transfer-stuck")
    time.sleep(WEDGE_S)
    code, wedged = run("capture", "-c", cluster, "-o", str(tmp_path / "b"), "--json")
    assert code == 0 and wedged["status"] == "complete", wedged["partial_reasons"]
    assert wedged["verdict"] == "WEDGED", wedged["findings"][:2]
    since = wedged["since"]
    # the right since: the wedge's own first log line, not the servers' start
    assert since is not None and t_fault - 1.5 <= since["at"] <= t_fault + WEDGE_S, (t_fault, since)
    assert any(k in since["evidence"] for k in ("KV_WAITING_TIMEOUT", "DECODE_TRANSFER_FAILED",
                                                "KV_TRANSFER_ERROR")), since
    assert "restart prefill-0" in wedged["mitigate"] and "decode-0" in wedged["mitigate"]
    assert wedged["archive"] and Path(wedged["archive"]).is_file()
    keep(wedged["report"], "transfer-stuck.html")

    t_recovered = time.time()
    set_fault(lab.dir, "healthy")
    time.sleep(SETTLE_S)
    code, healthy = run("capture", "-c", cluster, "-o", str(tmp_path / "b"), "--json",
                        "--since", WINDOW)
    assert code == 0 and healthy["verdict"] == "HEALTHY", (healthy["verdict"], healthy["findings"])
    assert healthy["since"] is None and healthy["window"]["how"] == "--since"
    assert healthy["window"]["start"] > t_recovered
    history = healthy["window"]["history"]  # the wedge's lines: shown, never judged
    assert any("decode-0" in h and "DECODE_TRANSFER_FAILED" in h for h in history), history
    keep(healthy["report"], "healthy-after-recovery.html")

    code, snap = run("snapshot", "-c", cluster, "--store", store, "--json", "--since", WINDOW)
    assert code == 0 and snap["verdict"] == "HEALTHY" and snap["healthy"], snap
    code, base = run("baseline", "show", "-c", cluster, "--store", store, "--json")
    assert base["baseline"]["name"] == snap["name"] and not base["explicit"], base
    # diff against the wedge's bundle: A is that snapshot, the baseline the store picked
    code, d = run("diff", "-c", cluster, "--store", store, "--json", wedged["archive"])
    assert code == 0 and Path(d["a"]) == Path(snap["path"]), d["a"]
    assert d["b"] == wedged["archive"]
