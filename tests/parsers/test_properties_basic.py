"""Property tests: every text parser, on arbitrary text and on mutated real samples, either
returns a well-formed frozen result or raises ParseError, nothing else."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.parsers import http, journal, nvidia_smi, prometheus, ss, systemd, versions

DATA = Path(__file__).resolve().parent.parent / "data"
SETTINGS = settings(max_examples=2000, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

_PUNCT = '{}[]()=",:;# \t\n\r|%*@-+._/\\\'<>'
_FORMATISH = st.text(
    alphabet=st.sampled_from(list(_PUNCT + "0123456789abcdefxXTPDNaInfEOF") + ["\x00", "é", "\u2028"]),
    max_size=150,
)


def _samples(prefix: str) -> list[tuple[str, ...]]:
    """The sample files named ``prefix*``, split into lines."""
    return [tuple(p.read_text(errors="replace").split("\n"))
            for p in sorted(DATA.glob(prefix + "*")) if p.suffix != ".md"]


@st.composite
def _mutated(draw: st.DrawFn, texts: list[tuple[str, ...]]) -> str:
    """A real sample with random line deletions/duplications, truncation, byte flips."""
    lines = list(draw(st.sampled_from(texts)))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "flip", "insert", "swap"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            lines.insert(i, draw(_FORMATISH))
        elif lines[i]:
            k = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:k] + draw(st.characters()) + lines[i][k + 1:]
    text = "\n".join(lines)
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


def _inputs(prefix: str) -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=200), _FORMATISH, _mutated(_samples(prefix)))


def _check_frozen(value: Any, depth: int = 0) -> None:
    """Dataclasses are frozen and hold tuples, never lists/dicts (private caches aside)."""
    assert depth < 20
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        assert type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
        for f in dataclasses.fields(value):
            if f.name.startswith("_"):
                continue
            _check_frozen(getattr(value, f.name), depth + 1)
    elif isinstance(value, tuple):
        for item in value:
            _check_frozen(item, depth + 1)
    else:
        assert not isinstance(value, (list, dict, set)), type(value)


def _run(fn: Callable[[], Any]) -> Any:
    try:
        result = fn()
    except ParseError as exc:
        assert str(exc)
        return None
    _check_frozen(result)
    return result


@SETTINGS
@given(_inputs("prom_"))
def test_prometheus(text: str) -> None:
    snap = _run(lambda: prometheus.parse_metrics(text))
    assert snap is not None  # never raises
    for s in snap.samples:
        assert list(s.labels) == sorted(s.labels)
        assert isinstance(s.value, float)
        assert s in snap.get(s.name)
    for name in snap.names():
        total = snap.value_sum(name)
        assert total is not None and (math.isnan(total) or isinstance(total, float))
    assert all(b.lineno >= 1 for b in snap.bad_lines)


@SETTINGS
@given(_inputs("nvsmi_"))
def test_nvidia_smi(text: str) -> None:
    for fields in (None, nvidia_smi.QUERY_GPU_FIELDS):
        gpus = _run(lambda f=fields: nvidia_smi.parse_query_gpu(text, f))  # type: ignore[misc]
        assert gpus is None or all(isinstance(g, nvidia_smi.GpuInfo) for g in gpus)
    _run(lambda: nvidia_smi.parse_compute_apps(text))
    _run(lambda: nvidia_smi.parse_row_remapper(text))
    for g in _run(lambda: nvidia_smi.parse_nvlink_errors(text)) or ():
        assert isinstance(g.total("Replay Errors"), int)
    events = _run(lambda: nvidia_smi.parse_xid_lines(text))
    assert events is not None  # grep-like: never raises
    assert all("NVRM: Xid" in e.line for e in events)


@SETTINGS
@given(_inputs("systemd_"))
def test_systemd(text: str) -> None:
    unit = _run(lambda: systemd.parse_systemctl_show(text))
    if unit is not None:
        assert unit.found == (unit.load_state not in (None, "not-found"))


@SETTINGS
@given(_inputs("ss_"))
def test_ss(text: str) -> None:
    for fn in (ss.parse_listening, ss.parse_established):
        table = _run(lambda f=fn: f(text))  # type: ignore[misc]
        if table is not None:
            counts = ss.established_per_port(table)
            assert sum(counts.values()) == sum(1 for r in table.rows if r.local.port is not None)
            assert all(0 <= p <= 65535 for p in table.ports())


@SETTINGS
@given(_inputs("log_"), st.none() | st.floats(0, 2e9))
def test_journal(text: str, since: float | None) -> None:
    hits = _run(lambda: journal.scan_log_signatures(text, since))
    assert hits is not None  # grep-like: never raises
    keys = [s.key for s in journal.SIGNATURES]
    assert [h.key for h in hits] == [k for k in keys if k in {h.key for h in hits}]
    for h in hits:
        assert h.count >= 1 and 1 <= len(h.samples) <= 5
        if h.first_epoch is not None and h.last_epoch is not None:
            assert h.first_epoch <= h.last_epoch


@SETTINGS
@given(st.one_of(st.binary(max_size=200), _inputs("http_").map(
    lambda t: t.encode("utf-8", "surrogatepass"))))
def test_http(data: bytes) -> None:
    r = _run(lambda: http.parse_http_response(data))
    if r is not None:
        assert r.status is None or 100 <= r.status <= 999
        assert isinstance(r.body_truncated, bool)
        try:
            r.json()
        except ParseError:
            pass


@SETTINGS
@given(_inputs("pip_"))
def test_versions(text: str) -> None:
    pkgs = _run(lambda: versions.parse_pip_freeze(text))
    if pkgs is not None:
        for name in pkgs:
            assert pkgs[name] == pkgs.get(name.upper())
    _run(lambda: versions.parse_uname(text))
    _run(lambda: versions.parse_nvidia_smi_version(text))
    _run(lambda: versions.parse_os_release(text))


@SETTINGS
@given(st.one_of(st.text(max_size=80), _FORMATISH))
def test_small_helpers(text: str) -> None:
    _run(lambda: ss.parse_endpoint(text))
    _run(lambda: systemd.parse_timestamp(text))
    _run(lambda: systemd.parse_exec(text))
    _run(lambda: systemd.parse_environment(text))
    _run(lambda: journal.parse_log_timestamp(text))
    _run(lambda: journal.parse_rank(text))
    assert isinstance(prometheus.canonical_name(text), str)
