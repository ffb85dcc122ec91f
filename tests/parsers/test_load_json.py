"""Load documents and the ways they mislead, on the real SGLang 0.5.23 / smg 1.13 answers."""

from __future__ import annotations

import json
from pathlib import Path

from pdforensics.parsers.load_json import read_load_doc

LOAD = Path(__file__).resolve().parent.parent / "data" / "field" / "load"


def _doc(slug: str):  # type: ignore[no-untyped-def]
    return read_load_doc(json.loads((LOAD / f"{slug}.json").read_text()))


def test_v1_loads_of_an_idle_prefill() -> None:
    d = _doc("gen-sglang0523-prefill-v1-loads-idle-control")
    assert (d.kind, d.role, d.version) == ("v1_loads", "prefill", "0.5.23")
    (r,) = d.ranks
    assert r.running == 0 and not r.busy and d.stale() == ()
    assert d.answered_at is not None and r.snapshot_at is not None and d.answered_at - r.snapshot_at < 1
    assert any("not evidence of idleness" in n for n in d.notes)
    assert any("utilization -1" in n for n in d.notes)


def test_a_snapshot_that_stopped_with_work_in_it_is_stale() -> None:
    doc = json.loads((LOAD / "gen-sglang0523-prefill-v1-loads-idle-control.json").read_text())
    doc["loads"][0].update(num_running_reqs=7, timestamp=doc["loads"][0]["timestamp"] - 120)
    doc["loads"][0]["disaggregation"]["prefill_inflight_queue_reqs"] = 3
    d = read_load_doc(doc)
    assert d is not None and [r.dp_rank for r in d.stale()] == [0]
    assert d.ranks[0].queues == (("prefill_inflight_queue_reqs", 3),)
    assert any("stopped publishing" in n for n in d.notes)


def test_router_loads_workers_model_info_and_a_404() -> None:
    r = _doc("gen-smg113-router-get-loads-control")
    assert r.kind == "router_loads" and [x.role for x in r.ranks] == ["prefill", "decode"]
    assert any("aggregate" in n for n in r.notes)
    assert _doc("gen-smg113-router-workers-control").kind == "router_workers"
    m = _doc("gen-sglang0523-prefill-model-info-control")
    assert (m.kind, m.role) == ("model_info", "prefill") and "without the scheduler" in m.notes[0]
    nf = _doc("gen-sglang0523-decode-get-load-404")
    assert nf.kind == "not_found" and "/v1/loads" in nf.notes[0]


def test_the_old_get_load_list_and_what_is_no_load_document() -> None:
    old = read_load_doc([{"dp_rank": 0, "num_reqs": 3, "num_waiting_reqs": 1, "num_tokens": 900}])
    assert old is not None and old.kind == "get_load" and old.ranks[0].running == 3 and old.ranks[0].busy
    others: tuple[object, ...] = ({}, [], {"detail": "Internal"}, {"loads": "x"}, 3, None, {"workers": None})
    for other in others:
        assert read_load_doc(other) is None, other
