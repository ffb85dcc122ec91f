"""Request-level log lines: SGLang's real formats (field logs and lines built from its source's
f-strings) and property tests (never a crash, ids read back as written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.parsers.requests import parse_request_lines

FIELD = Path(__file__).resolve().parent.parent / "data" / "field" / "log"
WITH_REQUESTS = sorted(p for p in FIELD.glob("*.meta.json")
                       if "requests" in json.loads(p.read_text())["expect"])


@pytest.mark.parametrize("meta", WITH_REQUESTS, ids=[p.name for p in WITH_REQUESTS])
def test_field_logs_give_their_requests(meta: Path) -> None:
    want = json.loads(meta.read_text())["expect"]["requests"]
    log = meta.with_name(meta.name.replace(".meta.json", ".log")).read_text()
    got = parse_request_lines(log)
    assert sorted({e.rid for e in got.events if e.rid}) == sorted(want["rids"])
    assert sorted({e.room for e in got.events if e.room is not None}) == sorted(want["rooms"])
    assert not got.logging_on  # failure lines only: --log-requests was off


def test_the_field_corpus_has_request_lines() -> None:
    assert len(WITH_REQUESTS) >= 2
    hits = [p for p in FIELD.glob("*.log") if parse_request_lines(p.read_text("utf-8", "replace")).events]
    assert len(hits) >= 10  # PD failure lines and smg router lines in many public reports


RECEIVE = ("[2026-12-02 10:20:28] Receive: obj=GenerateReqInput(sampling_params={'max_new_tokens': "
           "16}, rid='abc123', return_logprob=False, bootstrap_host='10.0.0.1', "
           "bootstrap_port=8998, bootstrap_room=4793981895866140836, data_parallel_rank=None)")
FINISH_ABORT = ("[2026-12-02 10:20:29] Finish: obj=GenerateReqInput(rid='abc123', "
                "bootstrap_room=4793981895866140836), out={'meta_info': {'id': 'abc123', "
                "'finish_reason': {'type': 'abort', 'message': 'x'}, 'prompt_tokens': 7}}")


def test_sglang_formats() -> None:
    text = "\n".join([
        RECEIVE,
        FINISH_ABORT,
        "[2026-12-02 10:20:30 TP3] Abort prealloc queue request. decode_req.req.rid='abc123'",
        "[2026-12-02 10:20:31 TP0] Request 77 timed out after 300.0s in KVPoll.Bootstrapping",
        '2026-02-26 13:00:11  INFO http_request{method=POST uri=/generate version=HTTP/1.1 '
        'module="smg" request_id="gnt-9"}: smg::request: src/middleware.rs:310: started processing request',
        "[2026-12-02 10:20:32] no request here rid=",
    ])
    got = parse_request_lines(text)
    assert [e.event for e in got.events] == ["received", "aborted", "abort_in_queue",
                                             "bootstrap_timeout", "router_start"]
    assert got.logging_on
    assert got.events[0].rid == "abc123" and got.events[0].room == 4793981895866140836
    assert got.events[0].line_no == 1 and got.events[0].at is not None
    assert got.events[2].queue == "prealloc" and got.events[2].rank == "TP3"
    assert got.events[3].room == 77 and got.events[3].rid is None
    assert got.events[4].rid == "gnt-9"


def test_empty_text_is_an_empty_result() -> None:
    assert parse_request_lines("").events == ()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_crashes_on_arbitrary_text(text: str) -> None:
    got = parse_request_lines(text)
    assert all(e.rid or e.room is not None for e in got.events)


@settings(max_examples=200, deadline=None)
@given(rid=st.from_regex(r"[0-9a-f]{8,32}", fullmatch=True),
       room=st.integers(min_value=0, max_value=2**63 - 1),
       noise=st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                              max_size=60), max_size=5))
def test_failure_lines_read_back(rid: str, room: int, noise: list[str]) -> None:
    line = (f"[2026-12-02 10:20:28 TP1] Decode transfer failed for request rank=1 "
            f"decode_req.req.rid='{rid}' decode_req.req.bootstrap_room={room} with exception "
            f"KVTransferError(bootstrap_room={room}): x")
    got = parse_request_lines("\n".join([*noise, line]))
    mine = [e for e in got.events if e.event == "transfer_failed" and e.line_no == len(noise) + 1]
    assert len(mine) == 1 and mine[0].rid == rid and mine[0].room == room
