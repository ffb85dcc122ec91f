"""The request tracker and its rules on built captures (tests/support/builder.py), and
`analyze --requests` (text and JSON) through click."""

from __future__ import annotations

import json
import time
from pathlib import Path

from click.testing import CliRunner

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.requests_track import track_requests
from pdforensics.cli import main
from pdforensics.views.loaded import load_capture
from tests.support.builder import BundleBuilder
from tests.support.bundles import T0


def stamp(at: float, tag: str = "") -> str:
    t = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))
    return f"[{t}{' ' + tag if tag else ''}]"


def receive(at: float, rid: str, room: int) -> str:
    return (f"{stamp(at)} Receive: obj=GenerateReqInput(rid='{rid}', bootstrap_host='h', "
            f"bootstrap_port=8998, bootstrap_room={room})")


def finish(at: float, rid: str, room: int, abort: bool = False) -> str:
    reason = "{'type': 'abort', 'message': 'x'}" if abort else "{'type': 'length', 'length': 8}"
    return (f"{stamp(at)} Finish: obj=GenerateReqInput(rid='{rid}', bootstrap_room={room}), "
            f"out={{'meta_info': {{'id': '{rid}', 'finish_reason': {reason}}}}}")


QUEUES = {"sglang:num_decode_prealloc_queue_reqs": 0, "sglang:num_decode_transfer_queue_reqs": 0,
          "sglang:num_running_reqs": 0, "sglang:generation_tokens_total": 5}


def build(tmp_path: Path, prefill: list[str], decode: list[str],
          decode_metrics: dict[str, float] | None = None) -> Path:
    b = BundleBuilder(tmp_path)
    m = {**QUEUES, **(decode_metrics or {})}
    b.add(host="p0", role="prefill", port=30000, log="\n".join(prefill) + "\n",
          samples=[{"sglang:generation_tokens_total": 5}] * 2)
    b.add(host="d0", role="decode", port=30001, log="\n".join(decode) + "\n", samples=[m, m])
    return b.write()


def keys(path: Path) -> list[str]:
    return [f.key for f in analyze(load_capture(path)).findings]


def test_finished_requests_fire_nothing(tmp_path: Path) -> None:
    p = build(tmp_path, [receive(T0 - 9, "a", 1), finish(T0 - 8, "a", 1)],
              [receive(T0 - 8, "a", 1), finish(T0 - 7, "a", 1)])
    track = track_requests(load_capture(p))
    assert len(track.requests) == 1 and not track.open and not track.silent
    assert dict(track.funnel) == {"router": 1, "prefill_bootstrap": 1, "prefill_forward": 1,
                                  "kv_sent": 1, "decode_prealloc": 1, "decode_transfer": 1,
                                  "decode_running": 1, "finished": 1}
    assert not {"FORGOTTEN_REQUESTS", "STRANDED_BOOTSTRAP", "PREALLOC_LEAK"} & set(keys(p))


def test_forgotten_past_the_default_timeout(tmp_path: Path) -> None:
    p = build(tmp_path, [receive(T0 - 600, "old", 7), finish(T0 - 599, "old", 7)],
              [receive(T0 - 598, "old", 7), receive(T0 - 5, "new", 8)],
              {"sglang:num_running_reqs": 2})
    cap = load_capture(p)
    track = track_requests(cap)
    by = {r.name: r for r in track.open}
    assert by["old"].stage == "decode_running" and (by["old"].age_s or 0) > 300
    a = analyze(cap)
    f = next(f for f in a.findings if f.key == "FORGOTTEN_REQUESTS")
    text = " | ".join(str(e) for e in f.evidence)
    assert "old" in text and "new" not in text.split("|")[0]  # only the one past 300 s
    assert "log_file.decode.30001" in text and "/metrics" in text


def test_stranded_bootstrap(tmp_path: Path) -> None:
    fail = (f"{stamp(T0 - 4, 'TP0')} Decode handshake failed for request rank=0 "
            "decode_req.req.rid='s1' decode_req.req.bootstrap_room=42 with exception "
            "KVTransferError(bootstrap_room=42): Failed to get kvcache from prefill instance")
    p = build(tmp_path, [receive(T0 - 5, "s1", 42)], [receive(T0 - 5, "s1", 42), fail,
                                                     finish(T0 - 4, "s1", 42, abort=True)])
    a = analyze(load_capture(p))
    assert a.findings[0].key == "STRANDED_BOOTSTRAP", [f.key for f in a.findings]
    text = " | ".join(str(e) for e in a.findings[0].evidence)
    assert "s1" in text and ":2 " in text and "Decode handshake failed" in text
    assert "FORGOTTEN_REQUESTS" not in keys(p)


def test_prealloc_leak(tmp_path: Path) -> None:
    oom = f"{stamp(T0 - 6, 'TP0')} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB"
    p = build(tmp_path, [receive(T0 - 700, "L", 5)], [oom, receive(T0 - 700, "L", 5)],
              {"sglang:num_decode_prealloc_queue_reqs": 1})
    ks = keys(p)
    assert ks[0] == "PREALLOC_LEAK", ks
    assert "FORGOTTEN_REQUESTS" not in ks  # the leak explains these requests


def test_servers_that_log_no_requests_say_how_to_turn_it_on(tmp_path: Path) -> None:
    p = build(tmp_path, [f"{stamp(T0)} The server is fired up and ready to roll!"],
              [f"{stamp(T0)} The server is fired up and ready to roll!"])
    cap = load_capture(p)
    track = track_requests(cap)
    assert not track.requests and len(track.silent) == 2
    skipped = {s.rule: s.reason for s in analyze(cap).skipped}
    assert "--log-requests" in skipped["FORGOTTEN_REQUESTS"]
    out = CliRunner().invoke(main, ["analyze", str(p), "--requests"])
    assert out.exit_code == 0 and "--log-requests" in out.output and "Funnel" in out.output


def test_analyze_requests_text_and_json(tmp_path: Path) -> None:
    p = build(tmp_path, [receive(T0 - 600, "old", 7)], [receive(T0 - 598, "old", 7)])
    out = CliRunner().invoke(main, ["analyze", str(p), "--requests"])
    assert out.exit_code == 0, out.output
    assert "old" in out.output and "decode prealloc" in out.output
    out = CliRunner().invoke(main, ["analyze", str(p), "--requests", "--json"])
    doc = json.loads(out.output)
    req = doc["requests"]["requests"][0]
    assert req["rids"] == ["old"] and req["outcome"] == "open" and req["age_s"] > 300
    assert {ln["line"] for ln in req["lines"]} == {1}
    assert doc["requests"]["funnel"][0] == {"stage": "router", "requests": 1}


def test_report_shows_the_table_and_funnel_escaped(tmp_path: Path) -> None:
    from pdforensics.report.page import render

    evil = "<script>x</script>"
    p = build(tmp_path, [receive(T0 - 600, "old", 7)],
              [receive(T0 - 598, "old", 7) + evil])
    cap = load_capture(p)
    page = render(cap, analyze(cap))
    section = page[page.index('id="requests"'):page.index('id="history"')]
    assert "<code>old</code>" in section and "decode prealloc" in section and "Funnel" in section
    assert "log_file.decode.30001" in section
    assert evil not in page and "&lt;script&gt;x&lt;/script&gt;" in section
