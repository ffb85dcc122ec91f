"""Property tests for the parsers test_properties_basic and test_properties_stacks leave out: NVML
probe JSON, ps and /proc files, systemctl cat unit files, and two small name helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdforensics.parsers import journal, nvml, proc, unitfile, versions
from tests.parsers.test_properties_basic import _FORMATISH, SETTINGS, _mutated, _run

pytestmark = pytest.mark.property

DATA = Path(__file__).resolve().parent.parent / "data"


def _lines(*globs: str) -> list[tuple[str, ...]]:
    return [tuple(p.read_text(errors="replace").split("\n")) for g in globs
            for p in sorted(DATA.glob(g)) if p.is_file() and p.suffix != ".md"]


_BYTES = st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace"))
_NUL_SEPARATED = st.lists(st.text(max_size=12) | st.sampled_from(["A=1", "=", "X=", "TOKEN=y", ""]),
                          max_size=8).map("\0".join)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.sampled_from(["available", "error", "driver_version", "gpus", "index", "name", "uuid",
                         "utilization", "memory_used", "memory_total", "pids", "power_error", "x"]),
        kids, max_size=6),
    max_leaves=10,
)


# numbers first: the edges (NaN, infinities, huge, bool-as-int) are where typed readers break
_NUM = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, 2**70, -1, 0, True]) | (
    st.floats() | st.integers(-(2**70), 2**70))
_LEAF = _NUM | st.none() | st.text(max_size=12)
_GPU = st.fixed_dictionaries({}, optional={
    k: _LEAF | st.lists(_LEAF, max_size=3)
    for k in ("index", "name", "uuid", "utilization", "memory_used", "memory_total", "pids", "power_error")})
# NVML-shaped documents with wild values where the probe puts numbers
_NVML_DOC = st.fixed_dictionaries({}, optional={
    "available": _LEAF, "error": _LEAF, "driver_version": _LEAF,
    "gpus": st.lists(_GPU | _LEAF, max_size=3) | _LEAF})


def _inputs(*globs: str) -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=200), _FORMATISH, _BYTES, _NUL_SEPARATED, _mutated(_lines(*globs)))


@SETTINGS
@given(st.one_of(_NVML_DOC.map(json.dumps), _JSON.map(json.dumps), _inputs("nvml_*")))
def test_nvml(text: str) -> None:
    report = _run(lambda: nvml.parse_nvml(text))
    if report is not None:
        assert isinstance(report.available, bool)
        for g in report.gpus:
            assert isinstance(g.index, int) and all(isinstance(p, int) for p in g.pids)
            for v in (g.memory_used_bytes, g.memory_total_bytes):
                assert v is None or isinstance(v, int)
            assert g.utilization_pct is None or isinstance(g.utilization_pct, float)


@SETTINGS
@given(_inputs("proc_*", "systemd_cat*", "log_compose*"))
def test_proc_units_and_names(text: str) -> None:
    table = _run(lambda: proc.parse_ps(text))
    assert table is not None  # bad lines are kept aside, never raised
    assert len(table.rows) + len(table.bad_lines) <= len([ln for ln in text.splitlines() if ln.strip()])
    assert all(isinstance(r.pid, int) and isinstance(r.args, str) for r in table.rows)
    argv = _run(lambda: proc.parse_cmdline(text))
    assert argv is not None and "\0".join(argv) + ("\0" if text.endswith("\0") else "") == text
    env = _run(lambda: proc.parse_environ(text))
    assert env is None or all("=" not in name for name, _v in env)
    unit = _run(lambda: proc.parse_cgroup_unit(text))
    assert unit is None or unit.endswith((".service", ".scope"))
    units = _run(lambda: unitfile.parse_unit_files(text))
    assert units is not None and all(p.path.startswith("/") for p in units.parts)
    assert units.fragment is None or units.fragment == units.parts[0]
    for line in text.splitlines()[:20]:
        stripped = journal.strip_compose_prefix(line)
        assert line.endswith(stripped)
    name = versions.normalize_name(text[:60])
    assert versions.normalize_name(name) == name
