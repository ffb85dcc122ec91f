"""Property tests for the readers beneath SGLang: on arbitrary text, on real field artifacts
mutated (lines deleted, duplicated, swapped, bytes flipped, cut short) and on arbitrary JSON
and bytes, each reader returns a well-formed frozen result or raises ParseError -- never
anything else, and never a reading that contradicts itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.parsers.beneath import read_beneath
from pdforensics.parsers.cuda_gdb import cuda_dump, parse_cuda_kernels
from pdforensics.parsers.flight_recorder import compare_dumps, parse_fr_bytes, parse_fr_trace_text
from pdforensics.parsers.load_json import read_load_doc
from pdforensics.parsers.native_stacks import parse_gdb, parse_ucx_backtrace
from pdforensics.parsers.nccl_ras import parse_ras, read_ras
from pdforensics.parsers.nccl_watchdog import cross_rank, read_watchdog
from tests.parsers.test_properties_basic import SETTINGS, _check_frozen, _mutated

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
_TEXTS = [tuple(p.read_text(errors="replace").split("\n"))
          for fam in ("nccl", "kernel", "gdb", "transfer_engine", "pyspy_top", "flight_recorder")
          for p in sorted((FIELD / fam).glob("*")) if not p.name.endswith((".meta.json", ".pkl"))]
_LOWER = st.lists(st.sampled_from(list("[]():,.=-_ \t\n0123456789abcdefxXLWPE#|*{}'\"") + [
    "NCCL ", "WARN ", "INFO ", "Rank ", "rank", "WorkNCCL(SeqNum=", "last completed NCCL work: ",
    "NVRM: Xid (PCI:", "PCIe Bus Error: severity=", "Out of memory: Killed process ", "Thread ",
    "(LWP ", "#0  0x", " in ", " from ", "==== backtrace (tid:", "Kernel ", "Active 0x",
    "ProcessGroupNCCL.cpp:", "Missing communicator data from ", "ranks have launched up to operation ",
    "Collecting samples from '", "%Own", "tcp_transport.cpp:1] ", "UCX  ERROR ", "Caught signal ",
    "E0101 00:00:00.000000 1 ", "\u2028", "\x00", "é"]), max_size=120).map("".join)
TEXT = st.one_of(st.text(max_size=300), _LOWER, _mutated(_TEXTS))


def _ok(fn: Any) -> Any:
    try:
        out = fn()
    except ParseError as exc:
        assert str(exc) and "\n" not in str(exc)
        return None
    _check_frozen(out)
    return out


@SETTINGS
@given(TEXT)
def test_read_beneath_never_fails(text: str) -> None:
    b = _ok(lambda: read_beneath(text))
    assert b is not None
    lines = text.count("\n") + 1
    for rec in (*b.watchdog, *b.nccl, *b.kernel, *b.transfer):
        assert 1 <= rec.lineno <= lines
    cr = _ok(lambda: cross_rank(b.watchdog))
    assert set(cr.suspects).isdisjoint(cr.victims)
    for s in cr.behind:  # the rank behind is a strict minority below the others
        assert sum(1 for x in cr.states if x.pg == s.pg) > 1


@SETTINGS
@given(TEXT)
def test_each_text_reader_never_fails(text: str) -> None:
    for fn in (read_watchdog, parse_gdb, parse_ucx_backtrace, cuda_dump, parse_cuda_kernels,
               parse_fr_trace_text):
        _ok(lambda fn=fn: fn(text))  # type: ignore[misc]
    ras = _ok(lambda: parse_ras(text))
    if ras is not None:
        r = _ok(lambda: read_ras(ras))
        assert set(r.behind).isdisjoint(r.ahead)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=5) | st.dictionaries(st.sampled_from(
                         ["entries", "pg_status", "pg_config", "version", "loads", "timestamp", "workers",
                          "model_path", "is_generation", "detail", "num_running_reqs", "disaggregation",
                          "collective_seq_id", "process_group", "profiling_name", "ranks", "dp_rank",
                          "last_completed_collective", "rank", "utilization", "frames", "x"]), c, max_size=6),
                     max_leaves=30)


@SETTINGS
@given(_JSON)
def test_json_documents_never_fail(doc: Any) -> None:
    _ok(lambda: read_load_doc(doc))
    data = json.dumps(doc).encode()
    d = _ok(lambda: parse_fr_bytes(data, "nccl_trace_rank_3"))
    if d is not None:
        assert d.rank in (3, None) or isinstance(d.rank, int)
        _ok(lambda: compare_dumps([d, d]))


@SETTINGS
@given(st.binary(max_size=400) | st.sampled_from(
    [p.read_bytes() for p in sorted((FIELD / "flight_recorder").glob("*.pkl"))]).map(
        lambda b: b[: len(b) // 2]))
def test_dump_bytes_never_fail(data: bytes) -> None:
    _ok(lambda: parse_fr_bytes(data, "x"))
