"""Scheduling around py-spy dumps. A first dump may run while the host's environ is still being
read, but nothing it printed reaches the bundle before the secret values from that environ are
known; it starts right after discovery; while a dump has its process stopped, the host starts
no other command, not even another dump (for DUMP_QUIET_S at most).

The transport replays canned results with a slow environ read (the scheduling and the
write order are under test; the real transports and py-spy have their own tests)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import pdforensics.capture.host_run as host_run
import pdforensics.capture.run as cap
from pdforensics.capture.planner import PlanOptions
from pdforensics.model import ClusterSpec, HostSpec, ServiceSpec
from tests.support.replay import Answer, ReplayTransport, replay_hosts

SECRET = "hf_Zq7vP2mXk9LwR4tB8nC1dF6gH3jK5sYe"  # a value only the environ says is secret
PS = ("  100     1 Sl       300   40 900000 /usr/bin/python3 -m sglang.launch_server --port 30001 "
      "--disaggregation-mode decode --enable-metrics --host 127.0.0.1\n")
RANKS = ("  101   100 Sl       300   20 500000 sglang::scheduler_TP0\n"
         "  102   100 Sl       300   20 500000 sglang::scheduler_TP1\n")
# real py-spy dump layout; the thread's name is the token (a thread named after its config)
DUMP = (f'Process 100: /usr/bin/python3 -m sglang.launch_server --port 30001\n'
        f'Python v3.11.7 (/usr/bin/python3.11)\n\n'
        f'Thread 100 (idle): "{SECRET}"\n'
        f'    event_loop_normal (sglang/srt/managers/scheduler.py:785)\n')


class SlowEnviron(ReplayTransport):
    """Answers at once, except environ: it takes `environ_s` seconds (a loaded host's sudo),
    or ends with nothing when the capture closes the connection first."""

    def __init__(self, host: HostSpec, environ_s: float, hung: bool = False,
                 dump_s: float = 0.0, ps: str = PS) -> None:
        super().__init__(host)
        self.ps = ps
        self.dump_s = dump_s  # how long each py-spy dump takes
        self.environ_s = environ_s
        self.hung = hung  # environ ignores the close too (a read stuck in the kernel)
        self.release = threading.Event()

    def reply(self, source: str) -> Answer:
        if source == "ps":
            return Answer(self.ps.encode())
        if source == "environ":
            if self.hung:
                self.release.wait(self.environ_s)
                return Answer(exit_status=None, error="stuck")
            if self.closed.wait(self.environ_s):
                return Answer(exit_status=None, error="connection lost")
            return Answer(f"PATH=/usr/bin\0HF_TOKEN={SECRET}\0".encode())
        if source == "pyspy":
            time.sleep(self.dump_s)
            return Answer(DUMP.encode())
        return Answer()


def _capture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, environ_s: float,
             deadline_s: float, hung: bool = False, channels: int = 6,
             dump_s: float = 0.0, ps: str = PS) -> tuple[SlowEnviron, Path]:
    made = replay_hosts(monkeypatch, lambda host: SlowEnviron(host, environ_s, hung, dump_s, ps))
    host = HostSpec(name="d", address="10.0.0.1", services=(ServiceSpec(role="decode", port=30001),))
    opts = cap.CaptureOptions(out_dir=tmp_path, deadline_s=deadline_s, channels=channels,
                              plan=PlanOptions(samples=1, stacks=True, stack_dumps=1, gpu=False,
                                                   versions=False))
    bundle = cap.run_capture(ClusterSpec(name="c", hosts=(host,)), opts).bundle
    assert isinstance(made[0], SlowEnviron)
    return made[0], bundle


def _bundle_bytes(bundle: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file())


def test_a_dump_done_before_environ_is_written_redacted(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    t, bundle = _capture(monkeypatch, tmp_path, environ_s=1.0, deadline_s=30)
    assert t.span("pyspy")[1] < t.span("environ")[1]  # the dump ran while environ was read
    rows = json.loads((bundle / "manifest.json").read_text())["results"]
    dump = next(r for r in rows if r["source"] == "pyspy")
    assert dump["exit_status"] == 0 and dump["error"] is None
    raw = (bundle / dump["path"]).read_bytes()
    assert b"event_loop_normal" in raw and SECRET.encode() not in raw
    assert SECRET.encode() not in _bundle_bytes(bundle)


def test_a_dump_whose_environ_never_came_back_keeps_its_row_but_not_its_output(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    t, bundle = _capture(monkeypatch, tmp_path, environ_s=60.0, deadline_s=6)
    assert "pyspy" in {s for s, _a, _b in t.runs}
    rows = json.loads((bundle / "manifest.json").read_text())["results"]
    dump = next(r for r in rows if r["source"] == "pyspy")
    assert dump["bytes"] == 0 and "environ reads" in dump["error"]
    assert SECRET.encode() not in _bundle_bytes(bundle)


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_host_still_stuck_in_environ_at_the_deadline_keeps_its_dump_row(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    t, bundle = _capture(monkeypatch, tmp_path, environ_s=60.0, deadline_s=6, hung=True)
    try:
        rows = json.loads((bundle / "manifest.json").read_text())["results"]
        dump = next(r for r in rows if r["source"] == "pyspy")
        assert dump["bytes"] == 0 and "environ reads" in dump["error"]
        assert SECRET.encode() not in _bundle_bytes(bundle)
        before = _bundle_bytes(bundle)
    finally:
        t.release.set()
    time.sleep(1.0)  # the stuck read comes back now, after the bundle is final
    assert _bundle_bytes(bundle) == before  # nothing written into the final bundle
    assert [p.name for p in tmp_path.iterdir()] == [bundle.name]  # nor a stray temporary one


def test_a_first_dump_starts_right_after_discovery(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """One channel: after the discovery-phase commands (ps, ss, the host clock, the first
    /metrics sample), the first py-spy dump (it sets when the capture can end) starts before the
    cheap reads and endpoints."""
    t, _ = _capture(monkeypatch, tmp_path, environ_s=0.0, deadline_s=30, channels=1)
    after = [s for s in t.calls if s not in ("ps", "ss_listen", "clock", "metrics")]
    assert after[0] == "pyspy", t.calls
    assert {"environ", "health", "cmdline"} <= set(after[1:]), t.calls


def _started_during_dumps(t: SlowEnviron) -> list[str]:
    dumps = [(a, b) for src, a, b in t.runs if src == "pyspy"]
    return [src for src, a, _b in t.runs if src != "pyspy" and any(d0 < a < d1 for d0, d1 in dumps)]


def test_no_command_starts_on_the_host_while_a_dump_stops_its_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A py-spy dump (0.1 s here) has its process stopped: the host starts nothing else until
    it is done, so the dump does not wait for a core behind the capture's own commands."""
    t, _ = _capture(monkeypatch, tmp_path, environ_s=0.0, deadline_s=30, dump_s=0.1)
    assert any(src == "pyspy" for src, _a, _b in t.runs)
    assert len(t.runs) > 5 and _started_during_dumps(t) == [], t.runs


def test_one_process_of_a_host_is_stopped_at_a_time(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """A server with two ranks: three dumps, one after the other, never two processes stopped
    at once (each py-spy gets a core instead of waiting, its process stopped, behind another)."""
    t, _ = _capture(monkeypatch, tmp_path, environ_s=0.0, deadline_s=30, dump_s=0.1, ps=PS + RANKS)
    dumps = sorted((a, b) for src, a, b in t.runs if src == "pyspy")
    assert len(dumps) == 3, t.runs
    assert all(b0 <= a1 for (_a0, b0), (a1, _b1) in zip(dumps, dumps[1:], strict=False)), dumps


def test_a_dump_that_hangs_holds_the_host_back_only_briefly(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A dump stuck for 3 s (a thread in D state) keeps the other commands waiting at most
    DUMP_QUIET_S: the cheap evidence still comes in while it hangs."""
    t, _ = _capture(monkeypatch, tmp_path, environ_s=0.0, deadline_s=30, dump_s=3.0)
    (_, d0, d1), = [r for r in t.runs if r[0] == "pyspy"]
    during = [a for src, a, _b in t.runs if src != "pyspy" and d0 < a < d1]
    assert during and min(during) - d0 < host_run.DUMP_QUIET_S + 0.3, t.runs
