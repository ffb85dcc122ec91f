"""A cheap /proc read that timed out with no output runs once more; an endpoint timeout does not.

The transport here replays canned results (the scheduling logic is what is under test; the
real transports have their own tests and the end-to-end ones)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

import pdforensics.capture.host_run as host_run
import pdforensics.capture.run as cap
from pdforensics.capture.planner import PlanOptions
from pdforensics.model import ClusterSpec, CommandResult, HostSpec, ServiceSpec

PS = ("  100     1 Sl       300   40 900000 /usr/bin/python3 -m sglang.launch_server --port 30001 "
      "--disaggregation-mode decode --enable-metrics --host 127.0.0.1\n")


class Replay:
    """Answers each command at once; the first environ read and every /health 'time out'."""

    def __init__(self, host: HostSpec) -> None:
        self.host = host
        self.calls: list[str] = []

    def connect(self, timeout_s: float) -> None:
        return None

    def close(self) -> None:
        return None

    forwarding_refused = False  # the Transport protocol's attribute

    def read_file(self, source: str, path: str, timeout_s: float, max_bytes: int,
                  tail: bool = False) -> CommandResult | None:
        return None  # files go through run(), as their cat/tail command

    def fetch(self, source: str, url: str, timeout_s: float, max_bytes: int) -> CommandResult | None:
        return None  # endpoints go through run(), as their curl command

    def run(self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int) -> CommandResult:
        self.calls.append(source)
        out, timed_out = b"", False
        status: int | None = 0
        if source == "ps":
            out = PS.encode()
        elif source == "environ" and self.calls.count("environ") == 1:
            timed_out, status = True, None
        elif source == "environ":
            out = b"PATH=/usr/bin\0SGLANG_X=1\0"
        elif source == "health":
            timed_out, status = True, None
        return CommandResult(host=self.host.name, source=source, argv=tuple(argv), exit_status=status,
                             stdout=out, stderr="", duration_s=0.01, started_at=time.time(),
                             timed_out=timed_out)


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> list[Replay]:
    made: list[Replay] = []

    def factory(host: HostSpec, accept: bool = False) -> Replay:
        made.append(Replay(host))
        return made[-1]

    monkeypatch.setattr(host_run, "open_transport", factory)
    return made


def test_a_timed_out_proc_read_is_retried_once_and_noted(replay: list[Replay], tmp_path: Path) -> None:
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
