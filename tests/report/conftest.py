"""Fixtures of the report tests: synthetic bundles, one headless Chromium per module, artifacts."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.report.report_cdp import Browser
from tests.support.pd_capture import SynthSpec, write_synthetic

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def synth(tmp_path: Path) -> Callable[..., Path]:
    """Write a synthetic bundle: synth(hosts=2, wedged=False, ...)."""
    counter = iter(range(1000))

    def make(**kw: object) -> Path:
        return write_synthetic(tmp_path / f"b{next(counter)}", SynthSpec(**kw))  # type: ignore[arg-type]

    return make


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (kept after the run): $PDFORENSICS_TEST_ARTIFACTS or build/."""
    d = Path(os.environ.get("PDFORENSICS_TEST_ARTIFACTS", REPO / "build" / "test-artifacts")) / "report"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One real headless Chromium per test module (start-up is slow on small machines)."""
    b = Browser()
    try:
        yield b
    finally:
        b.close()
