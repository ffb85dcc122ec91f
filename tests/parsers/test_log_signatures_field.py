"""Log signatures on the field corpus (tests/data/field/log, metrics): real artifacts copied
from public bug reports, each with the reading its sidecar names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdforensics.parsers.journal import match_log_signatures, scan_log_signatures
from pdforensics.parsers.prometheus import parse_metrics

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _artifacts(family: str) -> list[tuple[Path, dict[str, object]]]:
    out = []
    for meta in sorted((FIELD / family).glob("*.meta.json")):
        stem = meta.name[: -len(".meta.json")]
        art = next(p for p in meta.parent.glob(stem + ".*") if p != meta)
        out.append((art, json.loads(meta.read_text())))
    return out


LOGS = _artifacts("log")
METRICS = _artifacts("metrics")
SERVER_INFO = _artifacts("server_info")

# Real lines the shipped table does not match yet; each stays a strict xfail until it does.
KNOWN_MISSES: dict[str, str] = {}  # artifact name -> why the table misses it (strict xfail)


def _params(items: list[tuple[Path, dict[str, object]]]) -> list[object]:
    return [
        pytest.param(
            art,
            meta,
            id=art.name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[art.name])] if art.name in KNOWN_MISSES else [],
        )
        for art, meta in items
    ]


def test_corpus_is_there() -> None:
    assert len(LOGS) >= 32 and len(METRICS) >= 10 and len(SERVER_INFO) >= 1
    for art, meta in LOGS + METRICS + SERVER_INFO:
        assert {"source", "format", "kind", "expect"} <= set(meta), art.name
        assert str(meta["source"]).startswith("https://"), art.name
        assert meta["kind"] in ("log", "metrics", "server_info", "stacks"), art.name


@pytest.mark.parametrize("art,meta", _params(LOGS))
def test_field_log_signatures(art: Path, meta: dict[str, object]) -> None:
    expect = meta["expect"]
    assert isinstance(expect, dict)
    text = art.read_text()
    keys = {h.key for h in match_log_signatures(text)}
    assert set(expect.get("signatures", [])) <= keys, sorted(keys)
    assert not set(expect.get("not_signatures", [])) & keys, sorted(keys)
    # noise never reaches the findings' scanner
    assert "BATCH_STATS" not in {h.key for h in scan_log_signatures(text)}


@pytest.mark.parametrize("art,meta", METRICS, ids=[a.name for a, _ in METRICS])
def test_field_metrics_parse(art: Path, meta: dict[str, object]) -> None:
    snap = parse_metrics(art.read_text())
    assert snap.samples, art.name
    # a /metrics scrape is no log: nothing in it looks like a log signature
    causes = [h for h in scan_log_signatures(art.read_text()) if h.kind == "cause"]
    assert causes == []


@pytest.mark.parametrize("art,meta", SERVER_INFO, ids=[a.name for a, _ in SERVER_INFO])
def test_field_server_info_parses(art: Path, meta: dict[str, object]) -> None:
    assert meta["kind"] == "server_info"
    body = json.loads(art.read_text())
    assert isinstance(body, dict) and "version" in body, art.name
    # the role a PD server reports is where the sidecar's format says it is
    mode = body.get("disaggregation_mode")
    assert mode in ("null", "prefill", "decode"), art.name
    assert mode == "null" or mode in str(meta["format"]), art.name
