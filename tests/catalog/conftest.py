"""Fixtures for catalog tests: the pinned sglang wheel, downloaded once into the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.catalog.fetch import fetch_wheel
from pdforensics.catalog.load import PINNED_VERSION
from pdforensics.errors import PdforensicsError

# An older release that still declares flags with parser.add_argument(...) and
# still has --cuda-graph-max-bs and the old prefill "prealloc" queue metric.
CLASSIC_VERSION = "0.5.9"


def _wheel_or_none(version: str) -> tuple[Path | None, str]:
    try:
        return fetch_wheel(version), ""
    except PdforensicsError as exc:
        return None, str(exc)


@pytest.fixture(scope="session")
def pinned_wheel_or_reason() -> tuple[Path | None, str]:
    return _wheel_or_none(PINNED_VERSION)


@pytest.fixture(scope="session")
def classic_wheel_or_reason() -> tuple[Path | None, str]:
    return _wheel_or_none(CLASSIC_VERSION)
