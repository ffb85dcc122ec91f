"""The planner is fed from every channel's thread: ps and ss finishing at the same moment must
plan discovery's follow-up jobs once, not twice (twice doubled a host's py-spy dumps)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

import pdforensics.capture.planner as planner_mod
from pdforensics.capture.planner import HostPlanner, PlanOptions
from pdforensics.collectors.base import Job
from pdforensics.model import CommandResult, HostSpec, ServiceSpec
from pdforensics.parsers.proc import PsTable, parse_ps

SERVER = "/usr/bin/python3 -m sglang.launch_server --port 30001 --tp-size 2 --enable-metrics"
PS = "\n".join([f"{4242:>7} {1:>5} S {100:>10} {4:>3} {1000:>8} {SERVER}",
                *(f"{4243 + r:>7} {4242:>5} S {100:>10} {4:>3} {1000:>8} sglang::scheduler_TP{r}" for r in range(2))])


@dataclass(frozen=True)
class SlowOk(CommandResult):
    """A ps result whose `ok` check (read right after the planner stores the ps text) is slow,
    so the ss result can arrive in between, as it does when two channels finish together."""

    @property
    def ok(self) -> bool:
        time.sleep(0.05)
        return True


def _result(cls: type[CommandResult], source: str, text: str) -> CommandResult:
    return cls(host="h", source=source, argv=(source,), exit_status=0, stdout=text.encode(),
               stderr="", duration_s=0.1, started_at=0.0)


def test_discovery_is_planned_once_when_ps_and_ss_finish_together(monkeypatch: pytest.MonkeyPatch) -> None:
    real = parse_ps  # what the planner calls, until the patch below

    def slow_parse(text: str) -> PsTable:  # planning takes a while, like a big process table
        time.sleep(0.1)
        return real(text)

    monkeypatch.setattr(planner_mod, "parse_ps", slow_parse)
    host = HostSpec(name="h", address="local", services=(ServiceSpec(role="decode", port=30001),))
    planner = HostPlanner(host, PlanOptions())
    initial: dict[str, Job] = {j.source.name: j for j in planner.initial_jobs()}
    follow: list[list[str]] = []
    lock = threading.Lock()

    def finish(name: str, result: CommandResult, delay: float) -> None:
        time.sleep(delay)
        names = [j.source.name for j in planner.on_result(initial[name], result)]
        with lock:
            follow.append(names)

    threads = [threading.Thread(target=finish, args=("ps", _result(SlowOk, "ps", PS), 0.0)),
               threading.Thread(target=finish, args=("ss_listen", _result(CommandResult, "ss_listen", ""), 0.02))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    planned = [names for names in follow if names]
    assert len(planned) == 1, [len(n) for n in follow]
    assert planned[0].count("pyspy") == 3  # the first dump of the server and its 2 ranks
