"""Catalog lookups, aliases and the JSON round trip."""

from __future__ import annotations

import json

import pytest

from pdforensics.catalog import (
    METRIC_ALIASES,
    Catalog,
    canonical_metric,
    load_shipped_catalog,
    shipped_version,
    version_note,
)
from pdforensics.catalog.model import EnvInfo, FlagInfo, MetricInfo
from pdforensics.errors import PdforensicsError
from tests.catalog.known_entries import check_known_entries


def test_shipped_catalog_is_the_pinned_version_and_cached() -> None:
    cat = load_shipped_catalog()
    assert cat.version == shipped_version() == "0.5.23"
    assert load_shipped_catalog() is cat
    check_known_entries(cat)


def test_json_round_trip_of_shipped_catalog() -> None:
    cat = load_shipped_catalog()
    text = cat.to_json()
    again = Catalog.from_json(text)
    assert again == cat and again.to_json() == text
    assert again.flag("--tensor-parallel-size") == cat.flag("--tp-size")


def test_round_trip_small() -> None:
    cat = Catalog(
        "1.0", "test",
        {"--x": FlagInfo("--x", "int", 3, None, "h", (1, 2), None, None, "x", None, ("-x",))},
        {"E": EnvInfo("E", "int", 3, aliases=("OLD_E",))},
        {"sglang:m_total": MetricInfo("sglang:m_total", "sglang:m", "counter", "h", ("a",),
                                      samples=("sglang:m_total", "sglang:m_created"))},
    )
    again = Catalog.from_json(cat.to_json())
    assert again == cat
    assert again.flag("-x") == cat.flags["--x"] and again.env("OLD_E") == cat.env_vars["E"]
    assert again.metric("sglang_m_created") == cat.metrics["sglang:m_total"]
    assert json.loads(cat.to_json())["schema"] == 1


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"version": "1"}', "not json"])
def test_from_json_rejects_junk(text: str) -> None:
    with pytest.raises(PdforensicsError):
        Catalog.from_json(text)


def test_canonical_metric() -> None:
    assert canonical_metric("sglang_num_running_reqs") == "sglang:num_running_reqs"
    assert canonical_metric("sglang:num_prefill_prealloc_queue_reqs") == \
        "sglang:num_prefill_bootstrap_queue_reqs"
    assert canonical_metric("sglang_num_prefill_prealloc_queue_reqs") == \
        "sglang:num_prefill_bootstrap_queue_reqs"
    assert canonical_metric("smg_http_requests_total") == "smg_http_requests_total"
    assert canonical_metric(" sglang:token_usage ") == "sglang:token_usage"


def test_alias_targets_exist_and_sources_do_not() -> None:
    cat = load_shipped_catalog()
    for old, new in METRIC_ALIASES.items():
        assert new in cat.metrics, new
        assert old not in cat.metrics, old
        assert cat.metric(old) == cat.metrics[new]


def test_unknown_names() -> None:
    cat = load_shipped_catalog()
    assert cat.flag("--no-such-flag") is None and not cat.knows_flag("--cuda-graph-max-bs")
    assert cat.env("SGLANG_NO_SUCH") is None
    assert cat.metric("sglang:no_such") is None and not cat.knows_metric("x")


def test_version_note() -> None:
    cat = load_shipped_catalog()
    assert version_note("0.5.23", cat) is None
    note = version_note("0.5.9", cat)
    assert note is not None and "0.5.9" in note and "0.5.23" in note and "catalog build" in note
    assert "\n" not in note
    unknown = version_note(None, cat)
    assert unknown is not None and "unknown" in unknown
