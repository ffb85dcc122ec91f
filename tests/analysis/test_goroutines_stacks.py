"""Stack analysis of the real Go client dumps: one bucket of 30 blocked round trips, noise filtered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.analysis.stacks import analyze_stacks, load_stack_files, stacks_json
from pdforensics.analysis.stacks_classify import IDLE_CLASSES, IO_WAIT
from pdforensics.cli import main

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.parametrize("name, waits, runtime", [
    ("go_sigquit.txt", (2, 4), 7), ("go_pprof_debug2.txt", (2, 4), 0),
    ("go_pprof_debug1.txt", (None, None), 0),
])
def test_blocked_clients_form_one_bucket(name: str, waits: tuple[int | None, int | None],
                                         runtime: int) -> None:
    report = analyze_stacks(load_stack_files([str(DATA / name)]))
    # the runtime's own goroutines (goroutine 0, GC, finalizers: SIGQUIT shows them) are noise
    assert report.noise_by_reason == (("go keep-alive loop", 60),) + (
        (("go runtime", runtime),) if runtime else ())
    top = report.buckets[0]
    assert top.count == 30 and top.leaf_class == IO_WAIT and IO_WAIT not in IDLE_CLASSES
    assert "main.callBackend" in [f.function for f in top.frames]
    assert (top.wait_min, top.wait_max) == waits
    assert report.threads == sum(b.count for b in report.buckets)
    if name == "go_pprof_debug1.txt":  # groups carry no wait times at all
        assert all(b.wait_min is None for b in report.buckets)


def test_stacks_json_on_a_go_dump() -> None:
    res = CliRunner().invoke(main, ["stacks", "--json", str(DATA / "go_pprof_debug2.txt")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["threads"] == 36 and data["noise_filtered"] == 60
    top = data["buckets"][0]
    assert top["count"] == 30 and top["state"] == "select" and top["leaf_class"] == "io_wait"
    assert top["wait_minutes"] == {"min": 2, "max": 4}
    assert top["frames"][0].startswith("net/http.(*persistConn).roundTrip (")
    assert len(top["members"]) == 30 and data["outliers"] == []
    direct = stacks_json(analyze_stacks(load_stack_files([str(DATA / "go_pprof_debug2.txt")])))
    assert direct == data
