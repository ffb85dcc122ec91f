"""Flight Recorder dumps harvested by a real capture of the lab (issue 31): the decode server's
ranks name a dump prefix in their environment (TORCH_NCCL_DEBUG_INFO_TEMP_FILE, as torch reads
it); the capture lists the regular files `<prefix><rank>` there, reads each size-capped, writes
the pickles into the bundle as their redacted JSON form (never unpickled by a class), and the
analysis names the rank that never joined the collective the other rank entered.

The dumps are torch 2.13's own (gloo, CPU: no GPU on this machine), written by
/work/coord/frgen/fr_hang.py as recorded in tests/data/field/flight_recorder/*.meta.json."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.summary_md import BundleFacts, markdown_summary
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.config.cluster import load_cluster_file
from pdforensics.lab import lab_down, lab_up
from pdforensics.views.loaded import load_capture
from pdforensics.views.window import Since
from tests.support import ports

pytestmark = pytest.mark.lab

DATA = Path(__file__).resolve().parents[1] / "data"
RANK0 = DATA / "field" / "flight_recorder" / "gen-torch213-gloo-fr-rank0-pickle.pkl"
RANK1 = DATA / "fr_rank1_hung.pkl"  # the same run's rank 1 (it never joined collective 5)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("frlab")
    fr = d / "fr"
    fr.mkdir()
    shutil.copy(RANK0, fr / "nccl_trace_rank_0")
    shutil.copy(RANK1, fr / "nccl_trace_rank_1")
    (fr / "nccl_trace_rank_notes.txt").write_text("not a rank's dump\n")  # not <prefix><rank>
    (d / "outside").write_text("SECRET-OUTSIDE\n")
    os.symlink(d / "outside", fr / "nccl_trace_rank_2")  # not a regular file: never read
    env = {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": f"{fr}/nccl_trace_rank_"}
    info = lab_up(d / "lab", fault="healthy", base_port=ports.block(),
                  extra_env={"decode": env})
    try:
        opts = CaptureOptions(out_dir=d / "cap", deadline_s=40, plan=PlanOptions())
        yield run_capture(load_cluster_file(info.cluster_file), opts).bundle
    finally:
        lab_down(d / "lab")


def test_the_dumps_the_environment_names_are_harvested_as_json(bundle: Path) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    rows = [r for r in manifest["results"] if r["source"] == "flight_recorder"]
    # each file read without a shell (`read`) or by its command (`argv`)
    named = [a for r in rows for a in (r["read"], *(r["argv"] or ())) if a and "nccl_trace_rank_" in a]
    assert sorted(Path(a).name for a in named) == ["nccl_trace_rank_0", "nccl_trace_rank_1"], rows
    for r in rows:
        raw = (bundle / r["path"]).read_bytes()
        assert r["exit_status"] == 0 and raw.startswith(b"{"), r  # the pickle's JSON form
        assert not raw.startswith(b"\x80") and b"SECRET-OUTSIDE" not in raw
        doc = json.loads(raw)
        assert doc["version"] and doc["entries"]
    assert not any(b"SECRET-OUTSIDE" in p.read_bytes() for p in bundle.rglob("*") if p.is_file())


#: the dumps were written on 2026-12-04 (their entries' time_created_ns), before the lab started
WRITTEN = Since("2026-12-04", epoch=1_796_342_400.0)


def test_dumps_from_before_the_servers_started_are_history(bundle: Path) -> None:
    cap = load_capture(bundle)  # the window starts at the servers' start: the dumps predate it
    assert not [d for h in cap.hosts for _p, d in h.flight_recorder]
    old = sorted(-1 if d.rank is None else d.rank for h in cap.hosts for _p, d in h.fr_history)
    assert old == [0, 1]
    a = analyze(cap)
    assert "RANK_MISSING_FROM_COLLECTIVE" not in {f.key for f in a.findings}
    assert a.window is not None
    assert sum("Flight Recorder dump" in line for line in a.window.history) == 2, a.window.history
    assert a.diagnosis is None or a.diagnosis.suspect != "Rank 1"


def test_the_rank_that_never_joined_is_named(bundle: Path) -> None:
    cap = load_capture(bundle, since=WRITTEN)  # a window opened back to the incident judges them
    dumps = sorted((d.rank, len(d.entries)) for h in cap.hosts for _p, d in h.flight_recorder)
    assert dumps == [(0, 5), (1, 4)]
    a = analyze(cap)
    (f,) = [f for f in a.findings if f.key == "RANK_MISSING_FROM_COLLECTIVE"]
    assert f.severity == "critical" and f.suspect == "Rank 1", f.title
    assert "Rank 1 never joined collective 5" in f.title
    md = markdown_summary(a, BundleFacts("capture"), top=10)
    assert "RANK_MISSING_FROM_COLLECTIVE" in md and "Rank 1 never joined" in md
