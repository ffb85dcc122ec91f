"""bench_accuracy's scoring on the real field artifacts: right sidecars pass, a wrong
expectation is caught with the key, expected and got; floors gate, misses alone do not."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from pdforensics.triage.score import by_family, find_sidecars, score_artifact, tally

ROOT = Path(__file__).resolve().parent.parent.parent
FIELD = ROOT / "tests" / "data" / "field"
MINE = ["metrics/sglang-docs-production-metrics", "server_info/sglang-docs-native-api-server-info",
        "go/netflix-fuse-deadlock-docker-client"]


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "benchmarks" / "bench_accuracy.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    for slug in MINE:
        fam = tmp_path / slug.split("/")[0]
        fam.mkdir(exist_ok=True)
        for p in (FIELD / slug).parent.glob(Path(slug).name + ".*"):
            shutil.copy(p, fam / p.name)
    return tmp_path


def _edit(corpus: Path, slug: str, **expect: object) -> Path:
    meta = corpus / f"{slug}.meta.json"
    side = json.loads(meta.read_text())
    side["expect"].update(expect)
    meta.write_text(json.dumps(side))
    return meta


def test_the_field_artifacts_meet_their_sidecars(corpus: Path) -> None:
    scores = [score_artifact(m) for m in find_sidecars(corpus)]
    assert len(scores) == 3 and all(s.parsed and s.expected for s in scores), [s.misses for s in scores]
    assert [t.name for t in by_family(scores)] == ["go", "metrics", "server_info"]


def test_a_wrong_expectation_is_caught_with_expected_and_got(corpus: Path) -> None:
    go = _edit(corpus, MINE[2], threads=2, blocked_frame="chanrecv", long_waits=0)
    s = score_artifact(go)
    assert s.parsed and not s.expected
    got = {m.key: (m.expected, m.got) for m in s.misses}
    assert got["threads"] == (2, 1) and got["long_waits"] == (0, 1)
    expected_frame, got_frames = got["blocked_frame"]
    assert isinstance(got_frames, (list, tuple))
    assert expected_frame == "chanrecv" and any("roundTrip" in f for f in got_frames)
    info = _edit(corpus, MINE[1], verdict="WEDGED", findings=["SCHEDULER_ENDPOINT_HANG"])
    keys = {m.key for m in score_artifact(info).misses}
    assert keys == {"verdict", "findings"}


def test_a_wrong_kind_and_an_unreadable_artifact_are_misses(corpus: Path) -> None:
    meta = corpus / f"{MINE[0]}.meta.json"
    side = json.loads(meta.read_text())
    meta.write_text(json.dumps(side | {"kind": "log"}))
    (corpus / "metrics" / "sglang-docs-production-metrics.txt").write_text("just words\n")
    s = score_artifact(meta)
    assert not s.parsed and {m.key for m in s.misses} >= {"kind", "read"}
    assert tally("x", [s]).parse_rate == 0.0


def test_the_benchmark_prints_misses_and_gates_only_on_floors(corpus: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _edit(corpus, MINE[2], threads=7)
    mod = bench()
    assert mod.main(["--root", str(corpus)]) == 0
    out = capsys.readouterr().out
    overall = next(ln for ln in out.splitlines() if ln.startswith("overall")).split()
    assert overall == ["overall", "3", "3/3", "100.0%", "2/3", "66.7%"]
    assert "go/netflix-fuse-deadlock-docker-client.txt" in out and "threads: expected 7, got 1" in out
    assert mod.main(["--root", str(corpus), "--min-parse", "100", "--min-expected", "60"]) == 0
    assert mod.main(["--root", str(corpus), "--min-expected", "95"]) == 1
    assert "FLOOR NOT MET: expected share 66.7% < 95.0%" in capsys.readouterr().err
    assert mod.main(["--root", str(corpus), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["overall"]["expected"] == 2 and doc["misses"][0]["reasons"] == ["threads: expected 7, got 1"]


def test_parsed_means_a_reading_of_the_kind_the_sidecar_names(corpus: Path) -> None:
    meta = corpus / f"{MINE[1]}.meta.json"  # server_info JSON, claimed to be a stack dump
    meta.write_text(json.dumps(json.loads(meta.read_text()) | {"kind": "stacks"}))
    s = score_artifact(meta)
    assert not s.parsed and any(m.key == "kind" for m in s.misses)


@pytest.mark.parametrize(("slug", "kind", "ok"), [
    ("kernel/gpu-burn-1-aer-surprise-down-then-xid79", "kernel", True),
    ("nccl/basicsr-737-watchdog-allreduce-3-ranks", "nccl", True),
    ("nccl/basicsr-737-watchdog-allreduce-3-ranks", "kernel", False),  # it holds no kernel line
    ("gdb/gen-gdb13-thread-apply-all-bt-recv-lock", "gdb", True),
])
def test_a_sidecar_may_name_the_layer_beneath_sglang(tmp_path: Path, slug: str, kind: str, ok: bool) -> None:
    """A sidecar written without our vocabulary names a kernel log `kernel`, not `log`: it is
    met (and parsed) when the file holds records of that layer, and only then."""
    fam = tmp_path / slug.split("/")[0]
    fam.mkdir()
    for p in (FIELD / slug).parent.glob(Path(slug).name + ".*"):
        shutil.copy(p, fam / p.name)
    meta = fam / (Path(slug).name + ".meta.json")
    side = json.loads(meta.read_text())
    meta.write_text(json.dumps({**side, "kind": kind, "expect": {}}))
    s = score_artifact(meta)
    assert s.parsed is ok and s.expected is ok, s.misses
    assert ok or [m.key for m in s.misses] == ["kind"]
