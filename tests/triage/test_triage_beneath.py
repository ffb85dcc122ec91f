"""`triage` on the formats beneath SGLang: every field artifact of those families is read as
the kind its sidecar names (flight_recorder, pyspy_top, load, log, stacks), without error;
a gdb dump is never taken for a corrupt py-spy dump; a pickle is read without running it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.triage.read import read_path

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
FAMILIES = ("nccl", "kernel", "gdb", "flight_recorder", "pyspy_top", "load", "transfer_engine")


def _cases() -> list[tuple[Path, str]]:
    out = []
    for fam in FAMILIES:
        for meta in sorted((FIELD / fam).glob("*.meta.json")):
            art = next(p for p in meta.parent.glob(meta.name[: -len(".meta.json")] + ".*")
                       if not p.name.endswith(".meta.json"))
            out.append((art, json.loads(meta.read_text())["kind"]))
    return out


CASES = _cases()
#: artifacts whose sidecar kind is a known gap (known_gaps.json): strict xfails, as in the
#: corpus tests
_KIND_GAPS = {k for k, v in json.loads((FIELD / "known_gaps.json").read_text()).items()
              if "kind" in v}


def _param(path: Path, kind: str) -> object:
    gap = f"{path.parent.name}/{path.name}" in _KIND_GAPS
    return pytest.param(path, kind, id=f"{path.parent.name}/{path.stem}",
                        marks=[pytest.mark.xfail(strict=True, reason="known gap")] if gap else [])


def test_the_families_are_there() -> None:
    assert len(CASES) == 262 and {p.parent.name for p, _ in CASES} == set(FAMILIES)


@pytest.mark.parametrize("path,kind", [_param(p, k) for p, k in CASES])
def test_each_artifact_is_read_as_its_kind(path: Path, kind: str) -> None:
    art = read_path(str(path))
    assert art.usable, art.error
    assert kind in art.kinds and art.result_size > 0


def test_a_gdb_dump_is_not_a_corrupt_pyspy_dump() -> None:
    art = read_path(str(FIELD / "gdb" / "gen-gdb13-thread-apply-all-bt-recv-lock.txt"))
    assert art.kind == "stacks" and art.error is None and art.dumps[0].kind == "gdb"


def test_the_cli_describes_what_it_read() -> None:
    paths = [FIELD / "flight_recorder" / "gen-torch213-gloo-fr-rank0-pickle.pkl",
             FIELD / "pyspy_top" / "gen-pyspy043-top-idle-blocked.txt",
             FIELD / "load" / "gen-sglang0523-decode-get-load-404.json",
             FIELD / "nccl" / "nccl-1730-ras-ok-while-watchdog-times-out.txt"]
    res = CliRunner().invoke(main, ["triage", *map(str, paths)])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Flight Recorder dump, rank 0, 5 entries, 1 pending" in out
    assert "py-spy top, 7 functions, Active 0.0%" in out and "not_found document" in out
    assert "NCCL_COLLECTIVE_TIMEOUT" in out and "NCCL_RAS_REPORT" in out


@pytest.mark.parametrize(("path", "shown", "holds"), [
    ("kernel/gpu-burn-1-aer-surprise-down-then-xid79.log", "log", {"kernel"}),
    ("gdb/gen-gdb13-thread-apply-all-bt-recv-lock.txt", "stacks", {"gdb"}),
    ("nccl/basicsr-737-watchdog-allreduce-3-ranks.log", "log", {"nccl"}),
    ("transfer_engine/vllm-ascend-9747-tcp-writebody-readbody-eof.log", "log", {"transfer_engine"}),
    ("flight_recorder/gen-torch213-gloo-fr-rank0-json.json", "flight_recorder", {"flight_recorder"}),
    ("sglang_log/gen-sglang0523-prefill-startup-and-batches-control.log", "log", set()),
])
def test_a_file_says_which_layer_beneath_sglang_it_holds(path: str, shown: str, holds: set[str]) -> None:
    """Beside the kind a file is shown as, the layers beneath SGLang it holds evidence of, by
    the name of their source; the Files line says so."""
    art = read_path(str(FIELD / path))
    assert art.kind == shown and set(art.beneath_kinds) == holds, (art.kind, art.beneath_kinds)
    assert holds <= art.kinds
    out = CliRunner().invoke(main, ["triage", str(FIELD / path)]).output
    line = next(ln for ln in out.splitlines() if path.rsplit("/", 1)[1] in ln)
    extra = holds - {shown}
    assert ("holds" in line) == bool(extra), line
    for k in extra:
        assert k.replace("_", " ") in line, line


def test_a_log_with_a_stray_byte_is_read_as_text() -> None:
    """A real 0.5.23 log holds a request line with a broken token (bytes that are not UTF-8):
    it is still a log whose lines reach the diagnosis; bytes mostly undecodable are binary."""
    from pdforensics.triage.read import read_bytes
    from pdforensics.triage.run import triage_artifacts

    log = (FIELD / "log" / "real-sglang0523-prefill-scheduler-killed.log").read_bytes()
    assert "\ufffd" in log.decode("utf-8", "replace")
    art = read_bytes("prefill-0.log", log)
    assert art.kind == "log" and not art.data and art.text
    d = triage_artifacts([art]).diagnosis
    assert d is not None and d.side == "prefill"
    assert any(c.key == "SUBPROCESS_CRASHED" and c.label == "cause" for c in d.clues)
    noise = bytes(range(128, 256)) * 40
    assert read_bytes("blob", noise).data == noise
