"""The one SGLang command-line reader: every form argparse accepts, property-tested."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pdforensics.catalog import load_shipped_catalog
from pdforensics.catalog.cmdline import flag_value, has_flag, parse_flags, program_end, read_flags

SERVER = ["/usr/bin/python3", "-u", "-m", "sglang.launch_server"]


def test_dash_and_underscore_spellings_are_one_flag() -> None:
    argv = [*SERVER, "--tp_size", "8", "--dp-size=2", "--page_size=64"]
    assert flag_value(argv, "--tp-size") == "8"
    assert flag_value(argv, "--tp_size") == "8"
    assert parse_flags(argv) == {"--tp-size": "8", "--dp-size": "2", "--page-size": "64"}


def test_a_flag_followed_by_a_flag_has_no_value() -> None:
    argv = [*SERVER, "--port", "--host", "0.0.0.0"]
    assert flag_value(argv, "--port") is None
    assert has_flag(argv, "--port")
    assert flag_value(argv, "--host") == "0.0.0.0"


def test_values_that_start_with_a_dash() -> None:
    argv = [*SERVER, "--offset", "-1", "--input", "-", "--opt=-O2", "--scale", "-0.5e3"]
    flags = parse_flags(argv)
    assert flags["--offset"] == "-1" and flags["--input"] == "-"
    assert flags["--opt"] == "-O2" and flags["--scale"] == "-0.5e3"


def test_repeated_flags_keep_the_last_value() -> None:
    argv = [*SERVER, "--port", "1", "--port=2", "--port", "3"]
    assert flag_value(argv, "--port") == "3"


def test_interpreter_options_are_not_flags() -> None:
    assert program_end(SERVER) == 4
    assert "-u" not in parse_flags(SERVER)
    assert program_end(["sglang", "serve", "--port", "1"]) == 2
    assert program_end(["/opt/bin/smg", "launch", "--pd-disaggregation"]) == 2
    assert parse_flags(["smg", "launch", "--pd-disaggregation", "--port", "30000"]) == {
        "--pd-disaggregation": None, "--port": "30000"}


def test_a_value_with_spaces_stays_one_value() -> None:
    argv = [*SERVER, "--model-path", "/models/my model", "--port", "30000"]
    assert flag_value(argv, "--model-path") == "/models/my model"


def test_catalog_knows_switches_and_list_flags() -> None:
    cat = load_shipped_catalog()
    argv = [*SERVER, "--enable-metrics", "stray", "--port", "30000"]
    assert read_flags(argv, cat)["--enable-metrics"] == ()
    assert parse_flags(argv, cat)["--port"] == "30000"
    router = ["python3", "-m", "sglang_router.launch_router", "--worker-urls", "http://a", "http://b"]
    assert parse_flags(router)["--worker-urls"] == "http://a http://b"


_NAME = st.from_regex(r"[a-z]{1,6}([-_][a-z]{1,6}){0,2}", fullmatch=True)
_WORD = st.one_of(st.from_regex(r"[A-Za-z0-9/.:,]{1,12}", fullmatch=True),
                  st.integers(-10**6, 10**6).map(str), st.just("-"))


@given(st.dictionaries(_NAME, st.one_of(st.none(), _WORD), min_size=1, max_size=8),
       st.lists(st.sampled_from(["space", "equals", "underscore"]), min_size=8, max_size=8),
       st.sampled_from([SERVER, ["sglang", "serve"], ["python", "-m", "sglang.launch_server"]]))
def test_any_rendering_reads_back(flags: dict[str, str | None], forms: list[str],
                                  program: list[str]) -> None:
    argv = list(program)
    expected: dict[str, str | None] = {}
    for (name, value), form in zip(flags.items(), forms, strict=False):
        canonical = "--" + name.replace("_", "-")
        spelled = "--" + (name.replace("-", "_") if form == "underscore" else name)
        if value is None:
            argv.append(spelled)
        elif form == "equals":
            argv.append(f"{spelled}={value}")
        else:
            argv += [spelled, value]
        expected[canonical] = value  # later spellings of the same flag win
    assert parse_flags(argv) == expected
    for canonical, value in expected.items():
        assert flag_value(argv, canonical) == value
        assert has_flag(argv, canonical)


@given(st.lists(st.text(max_size=12), max_size=12))
def test_never_crashes(argv: list[str]) -> None:
    flags = parse_flags(argv)
    assert all(k.startswith("-") for k in flags)
