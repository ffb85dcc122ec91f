"""A login banner before a py-spy dump (an rc file's echo) is a preamble, not a parse error."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.pyspy import parse_pyspy_json, parse_pyspy_text

DATA = Path(__file__).resolve().parents[1] / "data"
BANNERS = ("Welcome to decode-0 -- authorised use only\n", "Last login: Mon Dec  1 10:00:00 2026\n\n*** motd ***\n")


@pytest.mark.parametrize("banner", BANNERS)
def test_text_dump_after_a_banner_parses_the_same(banner: str) -> None:
    text = (DATA / "pyspy_basic.txt").read_text()
    assert parse_pyspy_text(banner + text) == parse_pyspy_text(text)


@pytest.mark.parametrize("banner", BANNERS)
def test_json_dump_after_a_banner_parses_the_same(banner: str) -> None:
    text = (DATA / "pyspy_dump.json").read_text()
    assert parse_pyspy_json(banner + text) == parse_pyspy_json(text)


def test_a_banner_alone_is_still_an_error_quoting_it() -> None:
    with pytest.raises(ParseError, match="Welcome"):
        parse_pyspy_text(BANNERS[0])
