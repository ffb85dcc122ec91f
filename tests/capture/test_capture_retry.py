"""A cheap /proc read that timed out with no output runs once more; an endpoint timeout does not.

The transport here replays canned results (the scheduling logic is what is under test; the
real transports have their own tests and the end-to-end ones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pdforensics.capture.run as cap
from pdforensics.capture.planner import PlanOptions
from pdforensics.model import ClusterSpec, HostSpec, ServiceSpec
from tests.support.replay import Answer, ReplayTransport, replay_hosts

PS = ("  100     1 Sl       300   40 900000 /usr/bin/python3 -m sglang.launch_server --port 30001 "
      "--disaggregation-mode decode --enable-metrics --host 127.0.0.1\n")


class Replay(ReplayTransport):
    """Answers each command at once; the first environ read and every /health 'time out'."""

    def reply(self, source: str) -> Answer:
        if source == "ps":
            return Answer(PS.encode())
        if source == "environ" and self.calls.count("environ") == 1 or source == "health":
            return Answer(exit_status=None, timed_out=True)
        if source == "environ":
            return Answer(b"PATH=/usr/bin\0SGLANG_X=1\0")
        return Answer()


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> list[ReplayTransport]:
    return replay_hosts(monkeypatch, Replay)


def test_a_timed_out_proc_read_is_retried_once_and_noted(replay: list[ReplayTransport], tmp_path: Path) -> None:
    host = HostSpec(name="d", address="10.0.0.1", services=(ServiceSpec(role="decode", port=30001),))
    opts = cap.CaptureOptions(out_dir=tmp_path, deadline_s=30,
                              plan=PlanOptions(samples=1, stacks=False, gpu=False, versions=False))
    outcome = cap.run_capture(ClusterSpec(name="c", hosts=(host,)), opts)
    calls = replay[0].calls
    assert calls.count("environ") == 2
    assert calls.count("health") == 1  # an endpoint timeout is evidence: never retried
    rows = json.loads((outcome.bundle / "manifest.json").read_text())["results"]
    env = [r for r in rows if r["source"] == "environ"]
    assert len(env) == 1 and env[0]["exit_status"] == 0 and not env[0]["timed_out"]
    notes = json.loads((outcome.bundle / "parsed/d/discovery.json").read_text())["notes"]
    assert any("environ.pid100: timed out" in n and "retried once" in n for n in notes), notes
