"""Flight Recorder dumps: the real gloo dumps torch 2.13 wrote here (JSON and pickle), read
across ranks as PyTorch's analyzer reads them, and the analyzer's own text report."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.flight_recorder import (
    compare_dumps,
    dump_from_doc,
    parse_fr_bytes,
    parse_fr_trace_text,
    rank_from_name,
)

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
FR = FIELD / "flight_recorder"


def _dump(name: str):  # type: ignore[no-untyped-def]
    return parse_fr_bytes((FR / name).read_bytes(), name)


def test_a_json_dump_per_rank() -> None:
    d0 = _dump("gen-torch213-gloo-fr-rank0-json.json")
    assert d0.rank == 0 and d0.version == "2.10" and not d0.pickled
    assert [(e.seq, e.op) for e in d0.entries][-2:] == [(4, "gloo:broadcast"), (5, "gloo:all_reduce")]
    assert [(e.seq, e.retired) for e in d0.pending()] == [(5, False)]
    (st,) = d0.status
    assert (st.pg, st.last_enqueued, st.last_completed) == ("0", 5, 4)
    assert d0.groups == (("", "", (0, 1)),)


def test_the_pickle_holds_the_same_dump_and_its_python_frames() -> None:
    p = _dump("gen-torch213-gloo-fr-rank0-pickle.pkl")
    j = _dump("gen-torch213-gloo-fr-rank0-json.json")
    assert p.pickled and p.rank == 0
    assert [(e.seq, e.op, e.state, e.retired) for e in p.entries] == [
        (e.seq, e.op, e.state, e.retired) for e in j.entries]
    assert p.status == j.status
    assert p.entries[0].frame.startswith("all_reduce (") and j.entries[0].frame == ""


def test_the_rank_that_never_joined_is_found_as_the_analyzer_would() -> None:
    dumps = [_dump("gen-torch213-gloo-fr-rank0-json.json"), _dump("gen-torch213-gloo-fr-rank1-json.json")]
    (f,) = compare_dumps(dumps)
    assert (f.pg, f.seq, f.op, f.missing, f.joined) == ("0", 5, "gloo:all_reduce", (1,), (0,))
    assert compare_dumps(dumps[:1]) == ()  # one rank alone: nobody to compare with


def test_a_collective_entered_differently_is_a_mismatch() -> None:
    import json

    docs = [json.loads((FR / f"gen-torch213-gloo-fr-rank{r}-json.json").read_text()) for r in (0, 1)]
    docs[1]["entries"][1]["input_sizes"] = [[8]]
    (f,) = compare_dumps([dump_from_doc(d, r) for r, d in enumerate(docs)])
    assert f.seq == 2 and f.missing == () and f.mismatched == ((1, "gloo:all_reduce [[8]]"),)


@pytest.mark.parametrize("name,rank", [("nccl_trace_rank_3", 3), ("/tmp/nccl_trace_rank_12", 12),
                                       ("fr_rank1_hung.pkl", 1), ("trace_7", 7), ("dump", None)])
def test_rank_from_the_file_name(name: str, rank: int | None) -> None:
    assert rank_from_name(name) == rank


def test_not_a_dump() -> None:
    for data in (b'{"detail": "Not Found"}', b"hello", b"\x80\x04K\x01."):
        with pytest.raises(ParseError):
            parse_fr_bytes(data)


def test_the_analyzer_report() -> None:
    (rep,) = parse_fr_trace_text((FR / "pytorch-140563-fr-trace-size-mismatch-128-ranks.txt").read_text())
    assert rep.collective == 39 and ("collective", "nccl:all_reduce") in rep.fields
    assert rep.missing == () and rep.culprit is None  # the thread's excerpt lacks those lines
    text = ("Not all ranks joining collective, sequence number: 5\n"
            "internal record id: 4\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
            "missing ranks: {1, 6}\ninput sizes: [[4]]\n")
    (rep,) = parse_fr_trace_text(text)
    assert rep.collective == 5 and rep.missing == (1, 6)


TORCH_PYTHON = os.environ.get("PDF_TORCH_PYTHON", "")
_HANG = textwrap.dedent("""
    # the recipe of /work/coord/frgen/fr_hang.py (GENERATED.md), quick: dump after 1 s, then exit
    import datetime, os, sys, threading, time
    import torch, torch.distributed as dist
    import torch._C._distributed_c10d as c10d
    rank, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=20))
    t = torch.ones(4)
    for _ in range(3):
        dist.all_reduce(t)
    def dump():
        with open(f"{out}/nccl_trace_rank_{rank}", "wb") as f:
            f.write(c10d._dump_fr_trace())
        os._exit(0)
    threading.Timer(1.0, dump).start()
    if rank == 0:
        dist.all_reduce(t)      # rank 1 never joins this one
    time.sleep(30)
""")


@pytest.mark.skipif(not TORCH_PYTHON, reason="PDF_TORCH_PYTHON (a Python with torch) not set: "
                    "the stored real dumps cover the reader")
def test_a_real_dump_written_now_by_torch(tmp_path: Path) -> None:
    from tests.support.ports import port as free_port

    script = tmp_path / "hang.py"
    script.write_text(_HANG)
    port = str(free_port())
    env = {**os.environ, "TORCH_FR_BUFFER_SIZE": "2000", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}
    procs = [subprocess.Popen([TORCH_PYTHON, str(script), str(r), port, str(tmp_path)], env=env)
             for r in (1, 0)]
    try:
        for p in procs:
            p.wait(timeout=90)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    dumps = [parse_fr_bytes(f.read_bytes(), f.name) for f in sorted(tmp_path.glob("nccl_trace_rank_*"))]
    assert [d.rank for d in dumps] == [0, 1] and all(d.pickled for d in dumps)
    (f,) = compare_dumps(dumps)
    assert f.missing == (1,) and f.joined == (0,) and f.seq == 4, (f, sys.executable)


def test_a_dump_is_dated_by_its_newest_entry() -> None:
    d = _dump("gen-torch213-gloo-fr-rank0-json.json")
    assert [e.created_ns for e in d.entries][-1] == 1796399286969300248
    assert d.newest_epoch == pytest.approx(1796399286.9693, abs=1e-3)
    doc = {"version": "2.10", "pg_config": {}, "pg_status": {}, "entries": [
        {"collective_seq_id": 1, "time_created_ns": True},
        {"collective_seq_id": 2, "time_created_ns": 10**40},
        {"collective_seq_id": 3, "time_created_ns": "1796399286969300248"},
        {"collective_seq_id": 4, "time_created_ns": -5}]}
    undated = dump_from_doc(doc)
    assert [e.created_ns for e in undated.entries] == [None] * 4 and undated.newest_epoch is None
