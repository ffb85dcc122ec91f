"""The `real_sglang` tier (issue 34): the real SGLang 0.5.23 as a PD pair on this CPU behind the
real smg, captured over the lab's real sshd hosts; the healthy pair and five faults must give
their verdicts and top findings (tests/support/engine_matrix.py holds the expectations).

Its environment (~7 GB) lives outside the checkout (docs/lab.md); a machine without it builds
it first, and the tier says how long that took. Run alone:
`flock /work/coord/lab.lock .venv/bin/python -m pytest -m real_sglang tests/real_sglang`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pdforensics.lab import lab_down, lab_status, lab_up
from pdforensics.lab.core import LabInfo
from pdforensics.lab.engine.env import ensure_engine_env
from pdforensics.lab.procs import find_lab_processes
from tests.support import ports
from tests.support.engine_matrix import Row, capture_fault, table, write_rows
from tests.support.rule_matrix import ARTIFACT

pytestmark = [pytest.mark.real_sglang, pytest.mark.lab, pytest.mark.timeout(900)]
ROWS: list[Row] = []
TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def engine_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    t0 = time.monotonic()
    env = ensure_engine_env(say=print)
    TIMES["env_s"] = time.monotonic() - t0
    if not env.reused:
        print(f"real_sglang: built the engine environment in {env.built_s} s at {env.root}")
    d = tmp_path_factory.mktemp("engine")
    t1 = time.monotonic()
    info = lab_up(d / "lab", ssh=True, base_port=ports.block(), engine="sglang", tp=1, say=print)
    TIMES["up_s"] = time.monotonic() - t1
    try:
        yield info, d
    finally:
        started = [psutil.Process(p.pid) for p in lab_status(info.dir).processes if p.alive]
        started += [p for p in find_lab_processes(info.dir, {}) if p.pid not in {q.pid for q in started}]
        t2 = time.monotonic()
        lab_down(d / "lab")
        TIMES["down_s"] = time.monotonic() - t2
        write_rows(ROWS, ARTIFACT.parent / "real_engine_matrix.json")
        print(table(ROWS))
        print("real_sglang times: " + ", ".join(f"{k} {v:.0f}" for k, v in TIMES.items()))
        left = [p.pid for p in find_lab_processes(info.dir, {})]
        assert not left, f"lab down left processes of the engine lab: {left}"
        alive = [p.pid for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not alive, f"lab down left these of the {len(started)} processes it started: {alive}"


def _row(engine_lab: tuple[LabInfo, Path], fault: str) -> Row:
    info, d = engine_lab
    row = capture_fault(info, fault, d, "tier")
    ROWS.append(row)
    TIMES[fault] = row.switch_s + row.capture_s
    assert row.ok, (row.problems, row.findings, row.top_title)
    return row


# Order matters: forgotten-requests -> prefill-frozen is one stop seen twice, and the last two
# end the prefill server.

def test_healthy(engine_lab: tuple[LabInfo, Path]) -> None:
    row = _row(engine_lab, "healthy")
    assert not [f for f in row.findings if f.endswith(":critical")], row.findings


def test_rank_stopped(engine_lab: tuple[LabInfo, Path]) -> None:
    _row(engine_lab, "rank-stopped")


def test_forgotten_requests(engine_lab: tuple[LabInfo, Path]) -> None:
    _row(engine_lab, "forgotten-requests")


def test_prefill_frozen(engine_lab: tuple[LabInfo, Path]) -> None:
    _row(engine_lab, "prefill-frozen")


def test_server_killed(engine_lab: tuple[LabInfo, Path]) -> None:
    _row(engine_lab, "server-killed")


def test_breaker_open(engine_lab: tuple[LabInfo, Path]) -> None:
    _row(engine_lab, "breaker-open")
