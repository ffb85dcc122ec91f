"""Log signatures on the field corpus (tests/data/field/log, metrics): real artifacts copied
from public bug reports, each with the reading its sidecar names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdforensics.parsers.journal import match_log_signatures, scan_log_signatures
from pdforensics.parsers.pastes import unwrap_paste
from pdforensics.parsers.prometheus import parse_metrics
from tests.support.field import Case, cases, params


def _pairs(kind: str) -> list[tuple[Path, dict[str, object]]]:
    return [(c.path, c.meta) for c in cases((kind,))]


# every log of the corpus, whatever its family (sglang_log, log, nccl, kernel, ...), in both
# checks; the signature check on the families that SGLang's own table reads
LOGS = cases(("log",))
METRICS = _pairs("metrics")
SERVER_INFO = _pairs("server_info")


def test_corpus_is_there() -> None:
    assert len(LOGS) >= 90 and len(METRICS) >= 14 and len(SERVER_INFO) >= 3
    for c in LOGS:
        assert {"source", "format", "kind", "expect"} <= set(c.meta), c.rel
        assert str(c.meta["source"]).startswith(("https://", "generated here")), c.rel
    for art, meta in METRICS + SERVER_INFO:
        assert str(meta["source"]).startswith(("https://", "generated here")), art.name
        assert meta["kind"] in ("metrics", "server_info"), art.name


@pytest.mark.parametrize("case", params(LOGS, "signatures", "not_signatures"))
def test_field_log_signatures(case: Case) -> None:
    expect = case.expect
    text = case.path.read_text()
    keys = {h.key for h in match_log_signatures(text)}
    assert set(expect.get("signatures", [])) <= keys, sorted(keys)
    assert not set(expect.get("not_signatures", [])) & keys, sorted(keys)
    # noise never reaches the findings' scanner
    assert "BATCH_STATS" not in {h.key for h in scan_log_signatures(text)}


@pytest.mark.parametrize("art,meta", METRICS, ids=[a.name for a, _ in METRICS])
def test_field_metrics_parse(art: Path, meta: dict[str, object]) -> None:
    snap = parse_metrics(unwrap_paste(art.read_text()))  # (as triage reads a pasted scrape)
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
