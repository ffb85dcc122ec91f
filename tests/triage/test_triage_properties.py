"""Kind detection and reading never crash: arbitrary bytes, and real samples cut and wrapped."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdforensics.triage.read import KINDS, detect_kind, read_text
from pdforensics.triage.scrapes import read_scrapes, split_scrapes
from pdforensics.triage.unwrap import unwrap

pytestmark = pytest.mark.property

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLES = [p.read_text(errors="replace") for p in sorted(DATA.glob("*"))
           if p.is_file() and p.suffix in (".txt", ".log", ".json")]
SETTINGS = settings(max_examples=2000, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_BYTES = st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace"))
_PIECES = st.lists(st.sampled_from([
    "HTTP/1.1 200 OK", "< HTTP/1.1 200", "date: x", "$ curl x", "Thu Dec  3 08:55:55 UTC 2026",
    "# HELP a x", "# TYPE a gauge", "a 1", 'a{b="c"} 2 3', "# EOF", "{", "[", '{"version": 1}',
    "Thread 1 (idle)", "goroutine 1 [select]:", "Error: x", "Permission Denied", "",
    "svc-1  | [2026-12-02 10:20:28 TP0] x", "Traceback (most recent call last):", "\r"]),
    max_size=20).map("\n".join)


def _check(text: str) -> None:
    kind = detect_kind(text)
    assert kind is None or kind in KINDS
    art = read_text("x", text, len(text))
    assert art.kind is None or art.kind in KINDS
    assert art.usable or art.error
    assert art.result_size >= 0
    unwrap(text)
    split_scrapes(text)
    read_scrapes(text)


@SETTINGS
@given(_BYTES)
def test_arbitrary_bytes_never_crash(text: str) -> None:
    _check(text)


@SETTINGS
@given(_PIECES)
def test_wrapper_and_format_fragments_never_crash(text: str) -> None:
    _check(text)


@SETTINGS
@given(st.sampled_from(SAMPLES), st.integers(0, 20000), st.integers(0, 20000),
       st.sampled_from(["", "svc-1  | ", "Dec 02 10:20:28 h u[1]: ", "> "]))
def test_real_samples_cut_and_prefixed_never_crash(text: str, a: int, b: int, prefix: str) -> None:
    cut = text[min(a, b):max(a, b)]
    _check(cut)
    _check("\n".join(prefix + ln for ln in cut.split("\n")))
