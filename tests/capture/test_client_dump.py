"""`capture --client-dump FILE`: the dump is copied into the bundle (redacted like any other
text), listed in the manifest, and `analyze` of the bundle sets it beside the servers'
in-flight counts without the flag being given again.

The transport replays canned answers (the capture's scheduling has its own tests; the
real transports and the end-to-end runs have theirs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pdforensics.capture.run as cap
from pdforensics.analysis.client_dumps import client_dump_sidecars
from pdforensics.analysis.engine import analyze
from pdforensics.capture.planner import PlanOptions
from pdforensics.cli import main
from pdforensics.model import ClusterSpec, HostSpec, ServiceSpec
from pdforensics.views.loaded import load_capture
from tests.support.replay import Answer, ReplayTransport, replay_hosts

DATA = Path(__file__).resolve().parent.parent / "data"
PS = ("  100     1 Sl       300   40 900000 /usr/bin/python3 -m sglang.launch_server --port 30001 "
      "--disaggregation-mode decode --enable-metrics --host 127.0.0.1\n")
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Replay(ReplayTransport):
    """ps lists one decode server; /metrics answers with the wedged decode sample."""

    def reply(self, source: str) -> Answer:
        if source == "ps":
            return Answer(PS.encode())
        if source == "metrics":
            return Answer((DATA / "http_metrics_response.txt").read_bytes())
        return Answer()


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> None:
    replay_hosts(monkeypatch, Replay)


def test_a_client_dump_is_recorded_redacted_and_analysed_from_the_bundle(replay: None,
                                                                          tmp_path: Path) -> None:
    dump = tmp_path / "client-goroutines.txt"
    dump.write_text((DATA / "go_sigquit.txt").read_text() + f"\nGITHUB_TOKEN={SECRET}\n")
    host = HostSpec(name="d", address="10.0.0.1", services=(ServiceSpec(role="decode", port=30001),))
    opts = cap.CaptureOptions(out_dir=tmp_path / "b", deadline_s=30,
                              plan=PlanOptions(samples=1, stacks=False, gpu=False, versions=False))
    outcome = cap.run_capture(ClusterSpec(name="c", hosts=(host,)), opts,
                              sidecars=client_dump_sidecars([dump]))
    rows = json.loads((outcome.bundle / "manifest.json").read_text())["results"]
    row = next(r for r in rows if r["source"] == "client_dump")
    assert row["host"] == "client" and row["target"] == {"file": "client-goroutines.txt"}
    copied = (outcome.bundle / row["path"]).read_text()
    assert "net/http.(*persistConn).roundTrip" in copied and SECRET not in copied
    assert "<redacted:" in copied
    result = analyze(load_capture(outcome.bundle))
    client = next(f for f in result.findings if f.key == "CLIENT_BLOCKED")
    text = " | ".join(str(e) for e in client.evidence)
    assert "client-goroutines.txt" in text and "net/http roundTrip" in text
    assert "running" in text or "queue" in text  # the decode server's in-flight count beside it


def test_analyze_without_client_dumps_skips_the_client_rule(replay: None, tmp_path: Path) -> None:
    host = HostSpec(name="d", address="10.0.0.1", services=(ServiceSpec(role="decode", port=30001),))
    opts = cap.CaptureOptions(out_dir=tmp_path, deadline_s=30,
                              plan=PlanOptions(samples=1, stacks=False, gpu=False, versions=False))
    outcome = cap.run_capture(ClusterSpec(name="c", hosts=(host,)), opts)
    result = analyze(load_capture(outcome.bundle))
    assert any(s.rule == "CLIENT_BLOCKED" for s in result.skipped)


def test_capture_refuses_a_missing_client_dump(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["capture", "--local", "-o", str(tmp_path),
                                    "--client-dump", str(tmp_path / "nope.txt")])
    assert res.exit_code == 2 and "nope.txt" in res.output
