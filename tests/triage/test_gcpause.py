"""The collector is paused inside the block and as it was after it, also when the block fails."""

from __future__ import annotations

import gc

import pytest

from pdforensics.gcpause import collector_paused


def test_paused_inside_and_restored_after_even_on_an_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
