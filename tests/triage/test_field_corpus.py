"""Every field artifact (tests/data/field) against its whole sidecar, through the scorer that
benchmarks/bench_accuracy.py uses: what is met must stay met, and what is not met yet is
listed in tests/data/field/known_gaps.json, key by key, with why. A gap that closes fails
here until it is struck from the file (scripts/field_gaps.py prints the current list)."""

from __future__ import annotations

import pytest

from pdforensics.triage.score import score_artifact
from tests.support.field import Case, cases, known_gaps

CASES = cases()


def test_the_corpus_and_its_gap_list_agree() -> None:
    assert len(CASES) >= 219
    rels = {c.rel for c in CASES}
    stale = sorted(set(known_gaps()) - rels)
    assert stale == [], f"known_gaps.json names artifacts that are not in the corpus: {stale}"
    assert sum(bool(c.expect.get("reading", {}).get("control")) for c in CASES) >= 32


@pytest.mark.parametrize("case", CASES, ids=[c.rel for c in CASES])
def test_the_artifact_meets_its_sidecar_but_for_its_known_gaps(case: Case) -> None:
    s = score_artifact(case.meta_path)
    missed = {m.key: str(m) for m in s.misses}
    listed = known_gaps().get(case.rel, {})
    new = {k: v for k, v in missed.items() if k not in listed}
    closed = sorted(set(listed) - set(missed))
    assert not new, f"newly missed (a regression, or list it with its reason): {new}"
    assert not closed, f"met now: strike {closed} from known_gaps.json for {case.rel}"
    assert not s.control_alarm and not s.invented
