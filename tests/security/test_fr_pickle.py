"""A Flight Recorder dump is a pickle someone else made: reading it must never run its code.

Each crafted pickle here would create a marker file if it ran (os.system, builtins.exec,
subprocess, an extension code, an object whose class runs code). The reader refuses every one
with a one-line error, through `triage` too, and the marker never appears; the second guard
(an unpickler that refuses every class) holds even when the opcode check is skipped.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import pickletools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.parsers import safe_pickle
from pdforensics.parsers.flight_recorder import parse_fr_bytes
from pdforensics.triage.read import read_path

_PLAIN = (dict, list, tuple, set, frozenset, str, bytes, bytearray, int, float, bool, type(None))


class _Reduce:
    def __init__(self, call: object, args: tuple[object, ...]):
        self.call, self.args = call, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.call, self.args


def _crafted(marker: Path) -> dict[str, bytes]:
    cmd = f"touch {marker}"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    fr_like = {"version": "2.10", "pg_config": {}, "pg_status": {}, "entries": [_Reduce(os.system, (cmd,))]}
    return {
        "reduce_os_system_p2": pickle.dumps(_Reduce(os.system, (cmd,)), protocol=2),
        "reduce_exec_p4": pickle.dumps(_Reduce(exec, (code,)), protocol=4),
        "inside_an_fr_dump": pickle.dumps(fr_like, protocol=2),
        "inst_opcode_p0": f"(S'{cmd}'\nios\nsystem\n.".encode(),
        "obj_opcode": b"\x80\x02(cos\nsystem\nX" + len(cmd).to_bytes(4, "little") + cmd.encode() + b"o.",
        "build_setstate": b"\x80\x02cbuiltins\nexec\n)R}b.",
        "stack_global_p4": b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94"
                           b"\x93\x94\x8c" + bytes([len(cmd)]) + cmd.encode() + b"\x94\x85\x94R\x94.",
        "persistent_id": b"\x80\x02X\x01\x00\x00\x00xQ.",
        "extension_code": b"\x80\x02\x82\xf0(X" + len(cmd).to_bytes(4, "little") + cmd.encode() + b"\x85R.",
    }


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Path]:
    m = tmp_path / "RAN"
    copyreg.add_extension("os", "system", 0xF0)
    try:
        yield m
    finally:
        copyreg.remove_extension("os", "system", 0xF0)
    assert not m.exists(), "a crafted pickle ran code"


def test_every_crafted_pickle_is_refused_and_runs_nothing(marker: Path, tmp_path: Path) -> None:
    for name, data in _crafted(marker).items():
        with pytest.raises(ParseError) as exc:
            parse_fr_bytes(data, f"nccl_trace_rank_{name}")
        assert "\n" not in str(exc.value), name
        assert not marker.exists(), name


def test_the_crafted_pickles_really_would_run_code(tmp_path: Path) -> None:
    """The proof the test above means something: plain pickle.loads runs this one."""
    m = tmp_path / "RAN"
    pickle.loads(_crafted(m)["reduce_os_system_p2"])
    assert m.exists()


def test_the_unpickler_alone_refuses_every_class(marker: Path) -> None:
    """Second guard: even with the opcode check skipped, no class is ever resolved."""
    for name, data in _crafted(marker).items():
        with pytest.raises(Exception) as exc:
            safe_pickle._PlainUnpickler(io.BytesIO(data)).load()
        assert not isinstance(exc.value, SystemExit)
        assert not marker.exists(), name


def test_triage_reports_a_crafted_dump_as_an_error_line(marker: Path, tmp_path: Path) -> None:
    f = tmp_path / "nccl_trace_rank_0"
    f.write_bytes(_crafted(marker)["inside_an_fr_dump"])
    art = read_path(str(f))
    assert art.kind == "flight_recorder" and art.error and "refused" in art.error
    assert not marker.exists()


def test_the_opcodes_refused_are_every_one_that_names_or_calls_code() -> None:
    calling = {op.name for op in pickletools.opcodes if op.name in (
        "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
        "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID", "NEXT_BUFFER", "READONLY_BUFFER")}
    assert calling == set(safe_pickle.REFUSED_OPCODES)


def _plain(obj: object) -> bool:
    if isinstance(obj, dict):
        return all(_plain(k) and _plain(v) for k, v in obj.items())
    if isinstance(obj, list | tuple | set | frozenset):
        return all(_plain(v) for v in obj)
    return isinstance(obj, _PLAIN)


TRIPPED: list[object] = []


def _tripwire(*args: object) -> None:
    """What a generated pickle would call if any of its GLOBAL / REDUCE ever ran."""
    TRIPPED.append(args)


_TRIP = f"c{__name__}\n_tripwire\n".encode()
_OPS = st.sampled_from([_TRIP, b"cos\nsystem\n", b"\x93", b"R", b"b", b"(", b"t", b"}",
                        b"]", b"e", b"s", b"u", b"X\x05\x00\x00\x00touch", b"K\x01", b"N", b"\x85",
                        b"\x94", b"h\x00", b"\x82\xf0", b"o", b"i", b"\x81", b"Q", b"P"])


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.lists(_OPS, max_size=24), proto=st.sampled_from([b"\x80\x02", b"\x80\x04", b""]),
       noise=st.binary(max_size=40))
def test_random_pickle_programs_never_run_and_only_give_plain_data(body: list[bytes], proto: bytes,
                                                                   noise: bytes) -> None:
    for data in (proto + b"".join(body) + b".", noise, proto + noise):
        try:
            value = safe_pickle.load_plain(data)
        except ParseError:
            continue
        assert _plain(value)
    assert not TRIPPED


def test_the_tripwire_trips_under_plain_pickle() -> None:
    pickle.loads(_TRIP + b")R.")
    assert TRIPPED
    TRIPPED.clear()
