"""The log signature table: extraction from sglang wheels of several releases, by AST."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdforensics.catalog.fetch import fetch_wheel
from pdforensics.catalog.log_messages import extract_messages, message_pattern
from pdforensics.catalog.log_spec import SPECS
from pdforensics.catalog.log_table import (
    SHIPPED,
    TABLE_VERSIONS,
    build_table,
    build_table_from_paths,
    load_shipped_table,
    table_json,
)
from pdforensics.catalog.source import SourceTree, open_source
from pdforensics.errors import PdforensicsError

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO / ".cache" / "wheels"


def _wheel(version: str) -> Path:
    """The cached wheel (under the repo's .cache/, which git ignores); skip when offline."""
    try:
        return fetch_wheel(version, WHEELS)
    except PdforensicsError as exc:
        pytest.skip(f"offline, no sglang {version} wheel: {exc}")


def test_extract_fstring_printf_and_sinks() -> None:
    src = '''
import logging
logger = logging.getLogger(__name__)
def f(room, e, n):
    msg = f"Decode batch, #running-req: {n}, "
    logger.info(msg)
    logger.warning("Lost %d requests on %s", n, room)
    self.kv_mgr.record_failure(room, f"Request {room} timed out after {e:.1f}s in KVPoll.Bootstrapping")
    raise KVTransferError(room, "Aborted by AbortReq.")
    logger.error("x" + str(e))
'''
    got = {m.template: m.sink for m in extract_messages(src, "srt/disaggregation/x.py")}
    assert got["Decode batch, #running-req: {}, "] == "logger.info"
    assert got["Lost {} requests on {}"] == "logger.warning"
    assert got["Request {} timed out after {}s in KVPoll.Bootstrapping"] == "record_failure"
    assert got["Aborted by AbortReq."] == "raise KVTransferError"
    assert extract_messages("def (:", "x.py") == []


def test_message_pattern_matches_the_printed_line() -> None:
    import re

    [m] = [m for m in extract_messages(
        'logger.error(f"Prefill bootstrap failed for request rank={r} {req.rid=}\\nmore")',
        "x.py")]
    pat = message_pattern(m.parts)
    assert pat is not None
    regex, literal = pat
    assert literal == "prefill bootstrap failed for request rank="
    line = "[2025-11-11 21:44:24 DP2 TP2] Prefill bootstrap failed for request  rank=2 req.rid='9c'"
    assert re.search(regex, line)
    assert message_pattern(("x", None, "y")) is None  # too little literal text


def test_build_table_from_memory_tree() -> None:
    tree = SourceTree.from_texts({
        "srt/server_args.py": "",
        "version.py": '__version__ = "9.9.9"\n',
        "srt/disaggregation/common/conn.py":
            'logger.warning_once("Some requests fail to receive KV Cache transfer done signal '
            'after bootstrapping. ")\n',
        "srt/managers/scheduler.py":
            'def log_decode_stats(self):\n'
            '    msg = f"Decode batch. #running-req: {n}, "\n'
            '    msg += f"#prealloc-req: {a}, #transfer-req: {b}, "\n'
            '    logger.info(msg)\n',
    })
    table = build_table([tree])
    assert table["versions"]["9.9.9"]["queue_fields"]["decode"] == [
        "#prealloc-req", "#running-req", "#transfer-req"]
    rows = {s["key"]: s for s in table["signatures"]}
    assert rows["KV_DONE_SIGNAL_MISSING"]["patterns"][0]["versions"] == ["9.9.9"]
    assert rows["BATCH_STATS"]["label"] == "noise"


def test_shipped_table_is_well_formed() -> None:
    table = load_shipped_table()
    assert set(table["versions"]) == set(TABLE_VERSIONS)
    keys = [s["key"] for s in table["signatures"]]
    assert keys == [s.key for s in SPECS]
    assert all(k.isupper() and " " not in k for k in keys)
    labels = {s["key"]: s["label"] for s in table["signatures"]}
    assert labels["ABORTED_BY_ABORTREQ"] == "consequence"
    assert labels["BATCH_STATS"] == "noise"
    assert {s["label"] for s in table["signatures"]} == {"cause", "consequence", "noise"}
    for s in table["signatures"]:
        assert s["patterns"] or s["external"], s["key"]


@pytest.mark.network
@pytest.mark.parametrize("version,present,absent", [
    ("0.4.6", {"WATCHDOG_TIMEOUT", "HEALTH_CHECK_FAILED", "BOOTSTRAP_INFO_FAILED"},
     {"KV_BOOTSTRAP_TIMEOUT", "DECODE_TRANSFER_FAILED"}),
    ("0.4.10", {"KV_BOOTSTRAP_TIMEOUT", "KV_DONE_SIGNAL_MISSING", "DECODE_TRANSFER_FAILED",
                "ABORTED_BY_ABORTREQ"}, set()),
    ("0.5.23", {"KV_WAITING_TIMEOUT", "LOST_PREFILL_CONNECTION", "SCHEDULER_DEBUG_DUMP",
                "PYSPY_DUMP"}, set()),
])
def test_per_version_extraction(version: str, present: set[str], absent: set[str]) -> None:
    tree = open_source(_wheel(version))
    try:
        table = build_table([tree])
    finally:
        tree.close()
    found = {s["key"] for s in table["signatures"] if s["patterns"]}
    assert present <= found
    assert not absent & found
    assert table["versions"][version]["messages_read"] > 150


@pytest.mark.network
def test_shipped_table_equals_fresh_build(tmp_path: Path) -> None:
    paths = [_wheel(v) for v in TABLE_VERSIONS]
    fresh = table_json(build_table_from_paths(paths))
    # the wheel descriptions name the file and its sha256, not where it was cached
    assert json.loads(fresh) == json.loads(SHIPPED.read_text())
