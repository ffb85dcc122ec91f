"""The analysis tests' bundle builder (tests/support/builder.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.builder import BundleBuilder


@pytest.fixture
def builder(tmp_path: Path) -> BundleBuilder:
    return BundleBuilder(tmp_path)
