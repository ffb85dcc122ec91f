"""A process's py-spy dumps run one after another, each in its slot after discovery: dump n+1
is planned when dump n ends, so a late dump n never overlaps the next (py-spy cannot attach to a
process twice: "Failed to suspend process")."""

from __future__ import annotations

from pdforensics.capture.planner import HostPlanner, PlanOptions
from pdforensics.model import CommandResult, HostSpec, ServiceSpec

SERVER = "/usr/bin/python3 -m sglang.launch_server --port 30001 --tp-size 2 --enable-metrics"
PS = "\n".join([f"{4242:>7} {1:>5} S {100:>10} {4:>3} {1000:>8} {SERVER}",
                *(f"{4243 + r:>7} {4242:>5} S {100:>10} {4:>3} {1000:>8} sglang::scheduler_TP{r}" for r in range(2))])


def _result(source: str, text: str, started_at: float = 0.0) -> CommandResult:
    return CommandResult(host="h", source=source, argv=(source,), exit_status=0, stdout=text.encode(),
                         stderr="", duration_s=0.5, started_at=started_at)


def test_dumps_are_chained_in_their_slots() -> None:
    host = HostSpec(name="h", address="local", services=(ServiceSpec(role="decode", port=30001),))
    planner = HostPlanner(host, PlanOptions(samples=3, interval_s=2.0, stack_dumps=3))
    initial = {j.source.name: j for j in planner.initial_jobs()}
    jobs = planner.on_result(initial["ps"], _result("ps", PS)) + planner.on_result(initial["ss_listen"],
                                                                                      _result("ss_listen", ""))
    t0 = planner.discovered_at
    # 3 dumps must span >= 10 s (issue #14): the spacing is 10.2 / 2, not the 4 s of the samples
    assert t0 is not None and planner.dump_spacing_s == 5.1
    dumps = [j for j in jobs if j.source.name == "pyspy"]
    assert sorted(j.target.process.pid for j in dumps if j.target.process) == [4242, 4243, 4244]
    assert {(j.target.sample, j.not_before) for j in dumps} == {(1, t0)}
    server = next(j for j in dumps if j.target.process and j.target.process.pid == 4242)
    # dump 1 started 6 s late: dump 2 keeps its slot (t0 + 5.1, already past), so it runs right after
    second = planner.on_result(server, _result("pyspy", "Process 4242", started_at=t0 + 6))
    assert [(j.source.name, j.target.sample, j.not_before) for j in second] == [("pyspy", 2, t0 + 5.1)]
    third = planner.on_result(second[0], _result("pyspy", "Process 4242", started_at=t0 + 7))
    # the last dump keeps its slot (t0 + 10.2) unless that would span < 10.2 s from dump 1
    assert [(j.target.sample, j.not_before) for j in third] == [(3, t0 + 6 + 10.2)]
    assert planner.on_result(third[0], _result("pyspy", "Process 4242", started_at=t0 + 17)) == []
    other = next(j for j in dumps if j.target.process and j.target.process.pid == 4243)
    on_time = planner.on_result(other, _result("pyspy", "Process 4243", started_at=t0))
    last = planner.on_result(on_time[0], _result("pyspy", "Process 4243", started_at=t0 + 5.1))
    assert [(j.target.sample, j.not_before) for j in last] == [(3, t0 + 10.2)]  # on time: its slot


def _dump_argvs(host: HostSpec) -> list[tuple[str, ...]]:
    planner = HostPlanner(host, PlanOptions(samples=1, stack_dumps=1))
    initial = {j.source.name: j for j in planner.initial_jobs()}
    jobs = planner.on_result(initial["ps"], _result("ps", PS)) + planner.on_result(initial["ss_listen"],
                                                                                      _result("ss_listen", ""))
    return [j.argv for j in jobs if j.source.name == "pyspy"]


def test_a_dump_as_root_runs_at_a_higher_priority() -> None:
    """As root (sudo, a root login), py-spy runs under `nice -n -10`: the process it stops waits
    less for it on a busy host. A login that is not root cannot raise it (nice would print a
    "Permission denied" line that reads as py-spy's own failure), so its argv is py-spy's own."""
    service = (ServiceSpec(role="decode", port=30001),)
    for host in (HostSpec(name="h", address="10.0.0.1", user="ops", sudo=True, services=service),
                 HostSpec(name="h", address="10.0.0.1", user="root", services=service)):
        argvs = _dump_argvs(host)
        assert len(argvs) == 3 and all(_before_pyspy(a) == ("nice", "-n", "-10") for a in argvs), argvs
    argvs = _dump_argvs(HostSpec(name="h", address="10.0.0.1", user="ops", services=service))
    assert len(argvs) == 3 and all("nice" not in a and _before_pyspy(a)[-1] == "20" for a in argvs), argvs


def _before_pyspy(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The 3 words before `py-spy dump` (after the remote `timeout -k 2 20` wrapping)."""
    at = argv.index("py-spy")
    assert argv[at + 1] == "dump", argv
    return argv[at - 3:at]
