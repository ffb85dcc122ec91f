"""Issue 32 over real sshd: a host whose text attacks the tool itself.

One lab; the decode host's log gets every hostile line of the issue at once (a padded header for
the redactor, 40 KB frame lines for the stack readers, near-matches for the log signatures,
5000-digit numbers in `Process N:`, `line N`, `Pyspy dump for PID N` and Go `N minutes`), and its
`nvidia-smi` prints `0x` and 5000 hex digits. `capture --deadline 15` must end within 20 s with a
complete bundle (every source run, none skipped by the deadline), an analysis and a report, and
`analyze`, `report` and `verify --secrets` must read it without a traceback.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.bundle.ondisk import verify_bundle
from pdforensics.lab import lab_down, lab_up
from tests.e2e import faultkit as fk
from tests.support import ports

pytestmark = [pytest.mark.e2e, pytest.mark.lab]
BASE = ports.block(100, (*ports.LOOPBACKS, "127.0.0.10"))
DEADLINE = 15.0
BIG = "9" * 5000
PAD = " " * 40_000


def hostile_log() -> str:
    lines = [
        "x-api-key:" + " " * 25_000 + "x",  # the redactor's padded header (104 s on 25 KB before)
        'Traceback (most recent call last):\n  File "/srv/a.py", line 12, in handler' + PAD + "x\nValueError: x",
        'Thread 0x00007f0000000001 (most recent call first):\n  File "/srv/a.py", line 3 in f' + PAD + "x",
        # near-matches of the batch-line signatures (six chained `.*?` before)
        "Prefill batch" + ", #new-seq: 1" * 30 + ", #new-token: 1" * 30 + ", #cached-token: 1" * 30,
        f"[2026-12-04 10:00:00 TP0] Pyspy dump for PID {BIG}:",
        f"Process {BIG}: python3 -m sglang.launch_server",
        f'Traceback (most recent call last):\n  File "/srv/a.py", line {BIG}, in f\nRuntimeError: y',
        f"goroutine 1 [chan receive, {BIG} minutes]:\nmain.f()\n\t/a.go:1 +0x1",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    lab_dir = tmp_path_factory.mktemp("hostilelab")
    lab_up(lab_dir, fault="healthy", ssh=True, base_port=BASE)
    try:
        yield lab_dir
    finally:
        lab_down(lab_dir)


def test_a_hostile_host_gets_a_complete_bundle_within_the_deadline(lab: Path, tmp_path: Path) -> None:
    cluster = fk.read_cluster(lab / "cluster.toml")
    shared = Path(tempfile.mkdtemp(prefix="pdfx-hostile-"))
    shared.chmod(0o755)
    header = ("index, uuid, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
              "memory.total [MiB], temperature.gpu, power.draw [W], clocks.current.sm [MHz], "
              "clocks.current.memory [MHz], clocks_throttle_reasons.active, pstate, "
              "ecc.errors.uncorrected.volatile.total")
    row = f"0, GPU-1, NVIDIA H200, 0 %, 0 %, 1 MiB, 2 MiB, 30, 100.00 W, 1 MHz, 1 MHz, 0x{'f' * 5000}, P0, 0"
    (shared / "smi.txt").write_text(header + "\n" + row + "\n")
    fk.host(cluster, "decode-0")["nvidia_smi"] = fk.script(shared / "nvidia-smi", f"cat {shared / 'smi.txt'}")
    with open(lab / "logs" / "decode.log", "a") as log:
        log.write(hostile_log())
    cfile = fk.write_cluster(cluster, tmp_path / "c.toml")
    try:
        run = fk.capture(cfile, tmp_path / "out", "--deadline", str(DEADLINE), "--samples", "2",
                         "--interval", "1", "--stack-dumps", "1")
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)
    fk.no_traceback(run)
    assert run.rc in (0, 3), run.output
    assert run.wall_s <= DEADLINE + 5, f"ended after {run.wall_s:.1f} s"
    assert run.bundle is not None
    verify_bundle(run.bundle)
    manifest = run.manifest()
    late = [r for r in manifest.get("partial_reasons", []) if "deadline" in r]
    assert not late, late  # every collector ran: none left for the deadline, no host still collecting
    smi = run.results(host="decode-0", source="nvidia_smi_query")
    assert smi and smi[0]["exit_status"] == 0, smi
    assert (run.bundle / "analysis.json").is_file() and (run.bundle / "report.html").is_file()
    json.loads((run.bundle / "analysis.json").read_text())
    for argv in (["analyze", str(run.bundle)], ["report", str(run.bundle), "-o", str(tmp_path / "r.html")],
                 ["verify", "--secrets", str(run.bundle)], ["stacks", str(lab / "logs" / "decode.log")]):
        done = subprocess.run([*fk.CLI, *argv], capture_output=True, text=True, timeout=120)
        assert "Traceback (most recent call last)" not in done.stderr, (argv, done.stderr[-2000:])
        assert done.returncode in (0, 1, 3), (argv, done.returncode, done.stderr[-2000:])
        if argv[0] == "verify":
            assert done.returncode == 0, done.stdout[-3000:]  # a redacted capture: no finding at all
