"""Labels and roles from sglang's own source (the 0.5.23 wheel, read by AST): the code path that
prints a message decides whether it is a consequence, and which PD role prints it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pdforensics.catalog.fetch import fetch_wheel
from pdforensics.catalog.log_messages import extract_messages, read_messages
from pdforensics.catalog.log_table import load_shipped_table, role_of_code, source_label
from pdforensics.catalog.source import open_source
from pdforensics.errors import PdforensicsError
from pdforensics.triage.run import triage_paths

REPO = Path(__file__).resolve().parents[2]
FIELD = REPO / "tests" / "data" / "field"


def _messages() -> list:  # type: ignore[type-arg]
    try:
        wheel = fetch_wheel("0.5.23", REPO / ".cache" / "wheels")
    except PdforensicsError as exc:
        pytest.skip(f"offline, no sglang 0.5.23 wheel: {exc}")
    tree = open_source(wheel)
    try:
        return read_messages(tree)
    finally:
        tree.close()


def test_the_abort_path_and_another_ranks_failure_are_consequences_in_the_source() -> None:
    ms = _messages()
    other = [m for m in ms if "from another rank" in m.template]
    assert other and all("is_from_another_rank" in (m.consequence or "") for m in other)
    assert {m.scope for m in other} == {"CommonKVSender.failure_exception",
                                        "CommonKVReceiver.failure_exception"}
    aborted = [m for m in ms if m.template == "Aborted by AbortReq."]
    assert aborted and all(m.consequence for m in aborted)
    boot = [m for m in ms if "KVPoll.Bootstrapping" in m.template and m.sink == "record_failure"]
    wait = [m for m in ms if "KVPoll.WaitingForInput" in m.template and m.sink == "record_failure"]
    assert {role_of_code(m.rel, m.scope) for m in boot} == {"prefill"}  # the KV sender's
    assert {role_of_code(m.rel, m.scope) for m in wait} == {"decode"}  # the KV receiver's
    assert all(m.consequence is None for m in boot + wait)


def test_the_shipped_table_carries_the_source_labels_and_roles() -> None:
    rows = {r["key"]: r for r in load_shipped_table()["signatures"]}
    assert rows["FROM_ANOTHER_RANK"]["label"] == "consequence"
    assert rows["FROM_ANOTHER_RANK"]["label_why"].startswith("sglang's source")
    assert rows["ABORTED_BY_ABORTREQ"]["label_why"].startswith("sglang's source")
    roles = {r["key"]: {x for p in r["patterns"] for x in p["roles"]} for r in rows.values()}
    assert roles["KV_BOOTSTRAP_TIMEOUT"] == {"prefill"} and roles["KV_WAITING_TIMEOUT"] == {"decode"}
    assert roles["BOOTSTRAP_INFO_FAILED"] == {"decode"}
    assert any("in CommonKVReceiver." in w for p in rows["KV_WAITING_TIMEOUT"]["patterns"]
               for ws in p["where"].values() for w in ws)


def test_a_key_is_a_consequence_only_when_every_pattern_comes_from_such_a_path() -> None:
    both: list[dict[str, Any]] = [{"consequence": ["abort path"]}, {"consequence": []}]
    assert source_label("cause", both)[0] == "cause"
    assert source_label("cause", [{"consequence": ["abort path"]}]) == (
        "consequence", "sglang's source: abort path")


def test_a_scope_names_the_class_and_the_abort_method() -> None:
    src = '''
class MooncakeKVSender:
    def abort(self):
        self.kv_mgr.record_failure(self.room, "Aborted by AbortReq.")
    def poll(self):
        raise KVTransferError(self.room, reason or "Failed due to an unknown reason from another rank",
                              is_from_another_rank=reason is None)
'''
    got = {m.template: m for m in extract_messages(src, "srt/disaggregation/mooncake/conn.py")}
    assert got["Aborted by AbortReq."].scope == "MooncakeKVSender.abort"
    assert "abort path" in (got["Aborted by AbortReq."].consequence or "")
    other = got["Failed due to an unknown reason from another rank"]
    assert other.scope == "MooncakeKVSender.poll" and "is_from_another_rank" in (other.consequence or "")


def test_a_router_relaying_a_decode_500_is_a_consequence_in_the_diagnosis() -> None:
    d = triage_paths([str(FIELD / "log/slurmv4-smg-pd-router-decode-500.log")]).diagnosis
    assert d is not None and d.causes == ()
    relayed = [c for c in d.consequences if c.key == "ROUTER_RELAYED_ERROR"]
    assert relayed and all(c.side == "decode" and c.role == "router" for c in relayed)
    assert "not in the evidence" in d.headline
