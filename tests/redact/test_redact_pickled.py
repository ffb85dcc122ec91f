"""A Flight Recorder pickle on its way into a bundle: its secrets are scrubbed and it is
written as JSON (no pickle reaches disk), without ever running it; --no-redact keeps it."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from pdforensics.parsers.flight_recorder import parse_fr_bytes
from pdforensics.redact.redactor import NoRedactor, Redactor

FR = Path(__file__).resolve().parent.parent / "data" / "field" / "flight_recorder"
SECRET = "hf_" + "Qx7vL2mN9pR4tY8wZ3kJ6bC1dF5gH0sA"


def test_a_real_dump_becomes_its_json_form_with_the_same_reading() -> None:
    data = (FR / "gen-torch213-gloo-fr-rank0-pickle.pkl").read_bytes()
    out = Redactor(key=b"k" * 32).output("flight_recorder", data, "pickle")
    doc = json.loads(out)
    assert doc["version"] == "2.10" and len(doc["entries"]) == 5
    before, after = parse_fr_bytes(data, "x_rank_0"), parse_fr_bytes(out, "x_rank_0")
    assert [(e.seq, e.op, e.state) for e in after.entries] == [(e.seq, e.op, e.state) for e in before.entries]
    assert after.status == before.status and not after.pickled


def test_secrets_in_keys_and_values_are_scrubbed() -> None:
    dump = {"version": "2.10", "pg_config": {SECRET: {"desc": SECRET, "ranks": "[0]"}}, "pg_status": {},
            "entries": [{"profiling_name": "nccl:all_reduce", "frames": [{"filename": f"/x/{SECRET}.py"}]}]}
    out = Redactor(key=b"k" * 32).output("flight_recorder", pickle.dumps(dump, protocol=2), "pickle")
    assert SECRET.encode() not in out and json.loads(out)["entries"][0]["profiling_name"] == "nccl:all_reduce"


def test_a_crafted_or_broken_pickle_is_scrubbed_as_bytes_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    evil = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode() + SECRET.encode()
    out = Redactor(key=b"k" * 32).output("flight_recorder", b"\x80\x02" + evil, "pickle")
    assert not marker.exists() and SECRET.encode() not in out


def test_no_redact_keeps_the_bytes() -> None:
    data = (FR / "gen-torch213-gloo-fr-rank0-pickle.pkl").read_bytes()
    assert NoRedactor().output("flight_recorder", data, "pickle") == data
