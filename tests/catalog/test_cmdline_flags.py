"""Command lines -> flags: order-insensitive, `--x=1` is `--x 1`, switches from the catalog."""

from __future__ import annotations

import pytest

from pdforensics.catalog import load_shipped_catalog
from pdforensics.catalog.cmdline import normalise_flag, parse_flags

PY = ("/usr/bin/python3", "-m", "sglang.launch_server")


@pytest.fixture(scope="module")
def cat():
    return load_shipped_catalog()


def test_equals_and_space_forms_are_the_same() -> None:
    assert parse_flags([*PY, "--tp-size=8"]) == parse_flags([*PY, "--tp-size", "8"]) == {"--tp-size": "8"}


def test_order_does_not_matter(cat) -> None:
    a = parse_flags([*PY, "--tp-size", "8", "--mem-fraction-static", "0.8", "--enable-metrics"], cat)
    b = parse_flags([*PY, "--enable-metrics", "--mem-fraction-static=0.8", "--tp-size", "8"], cat)
    assert a == b
    assert a["--enable-metrics"] is None


def test_underscores_normalise_to_dashes() -> None:
    assert normalise_flag("--mem_fraction_static=0.8") == "--mem-fraction-static"
    assert normalise_flag("-x") == "-x"
    assert parse_flags([*PY, "--mem_fraction_static", "0.8"]) == {"--mem-fraction-static": "0.8"}


def test_catalog_switch_does_not_swallow_the_next_word(cat) -> None:
    # --trust-remote-code is store_true: a stray word after it is not its value
    flags = parse_flags([*PY, "--trust-remote-code", "stray", "--port", "30000"], cat)
    assert flags == {"--trust-remote-code": None, "--port": "30000"}
    # without the catalog the word is taken as a value
    assert parse_flags([*PY, "--trust-remote-code", "stray"])["--trust-remote-code"] == "stray"


def test_aliases_map_to_the_canonical_name(cat) -> None:
    flags = parse_flags([*PY, "--tensor-parallel-size", "4"], cat)
    assert flags == {"--tp-size": "4"}


def test_repeated_flag_keeps_the_last_value() -> None:
    assert parse_flags([*PY, "--port", "1", "--port", "2"]) == {"--port": "2"}


def test_negative_numbers_are_values() -> None:
    assert parse_flags([*PY, "--chunked-prefill-size", "-1"]) == {"--chunked-prefill-size": "-1"}


def test_router_positionals_attach_to_the_flag_before() -> None:
    argv = ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation",
            "--prefill", "http://p:30000", "8998", "--decode", "http://d:30001"]
    flags = parse_flags(argv)
    assert flags["--prefill"] == "http://p:30000 8998"
    assert flags["--decode"] == "http://d:30001"
    assert flags["--pd-disaggregation"] is None


@pytest.mark.parametrize("program", [
    ("python3", "-m", "sglang.launch_server"),
    ("/opt/venv/bin/python", "/src/sglang/launch_server.py"),
    ("/opt/venv/bin/sglang", "serve"),
])
def test_program_prefix_is_not_flags(program: tuple[str, ...]) -> None:
    assert parse_flags([*program, "--model-path", "/m"]) == {"--model-path": "/m"}


def test_interpreter_options_are_skipped() -> None:
    # `python3 -u -m sglang.launch_server`: -u belongs to the interpreter
    assert parse_flags(["python3", "-u", "-m", "sglang.launch_server", "--port", "1"]) == {"--port": "1"}


def test_misspelled_flag_is_kept_with_its_value(cat) -> None:
    flags = parse_flags([*PY, "--chunked-prefil-size", "4096", "--port", "1"], cat)
    assert flags["--chunked-prefil-size"] == "4096"
    assert cat.flag("--chunked-prefil-size") is None
