"""Captures of the real engine (SGLang 0.5.23 on the CPU behind the real smg 1.13.0), archived
as `capture` writes them (tests/data/real_engine/README.md): each reads with the verdict, top
finding and request-path diagnosis the real-engine matrix expects of its fault
(tests/support/engine_matrix.py EXPECT). Fast (no engine): what the tier checks live, pinned
on one real run of each, so a rule change that breaks a real reading fails in every CI run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.untrusted.archive import opened_bundle
from pdforensics.views.loaded import load_capture
from tests.support.engine_matrix import EXPECT

DATA = Path(__file__).resolve().parent.parent / "data" / "real_engine"


@pytest.mark.parametrize("fault", ["rank-stopped", "prefill-frozen", "breaker-open", "kv-full"])
def test_a_real_capture_reads_as_its_fault(fault: str) -> None:
    want = EXPECT[fault]
    with opened_bundle(DATA / f"{fault}.tar.gz") as bundle:
        a = analyze(load_capture(bundle))
    keys = [f.key for f in a.findings]
    assert a.verdict in want.verdict, (a.verdict, keys)
    assert keys[0] in want.top, keys
    assert want.top_says in a.findings[0].title, a.findings[0].title
    d = a.diagnosis
    assert d is not None
    assert d.stage in want.stage and d.side in want.side, (d.stage, d.side, d.headline)


def test_decode_running_its_requests_alone_is_no_decode_only_dispatch() -> None:
    """The stopped decode holds 3 requests smg sent as PD pairs (22 to each worker): no
    'requests to decode but none to prefill' (it had put the diagnosis at router_dispatch)."""
    with opened_bundle(DATA / "rank-stopped.tar.gz") as bundle:
        a = analyze(load_capture(bundle))
    assert "DECODE_ONLY_DISPATCH" not in {f.key for f in a.findings}


def test_the_killed_prefill_is_the_cause_behind_the_outage() -> None:
    """SGLang's launcher line 'Subprocess scheduler_0 (pid=N) crashed with exit code -9' is
    the upstream cause; smg's refusals follow from it."""
    with opened_bundle(DATA / "breaker-open.tar.gz") as bundle:
        a = analyze(load_capture(bundle))
    d = a.diagnosis
    assert d is not None and d.side == "prefill"
    cause = next(c for c in d.clues if c.key == "SUBPROCESS_CRASHED")
    assert cause.label == "cause" and "crashed with exit code -9" in cause.text
