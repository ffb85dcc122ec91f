"""The planner beneath SGLang: Flight Recorder dumps found from the ranks' environments and
read size-capped, NCCL RAS only with --nccl-ras and where the ranks leave it on, cuda-gdb only
with --deep, one rank at a time after its last py-spy dump, and the manifest's record of the
pause it caused."""

from __future__ import annotations

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.capture.beneath_plan import deep_record
from pdforensics.capture.planner import HostPlanner, PlanOptions
from pdforensics.collectors.base import Job
from pdforensics.model import CommandResult, HostSpec, ServiceSpec

SERVER = "/usr/bin/python3 -m sglang.launch_server --port 30001 --tp-size 2 --enable-metrics"
PS = "\n".join([f"{4242:>7} {1:>5} S {100:>10} {4:>3} {1000:>8} {SERVER}",
                *(f"{4243 + r:>7} {4242:>5} S {100:>10} {4:>3} {1000:>8} sglang::scheduler_TP{r}"
                  for r in range(2))])
HOST = HostSpec(name="h", address="local", services=(ServiceSpec(role="decode", port=30001),))


def _result(source: str, out: bytes, started_at: float = 0.0) -> CommandResult:
    return CommandResult(host="h", source=source, argv=(source,), exit_status=0, stdout=out,
                         stderr="", duration_s=0.5, started_at=started_at)


def _discovered(options: PlanOptions) -> tuple[HostPlanner, list[Job]]:
    planner = HostPlanner(HOST, options)
    initial = {j.source.name: j for j in planner.initial_jobs()}
    jobs = (planner.on_result(initial["ps"], _result("ps", PS.encode()))
            + planner.on_result(initial["ss_listen"], _result("ss_listen", b"")))
    return planner, jobs


def _env(job: Job, **env: str) -> bytes:
    return b"\0".join(f"{k}={v}".encode() for k, v in {"PATH": "/usr/bin", **env}.items()) + b"\0"


def _named(jobs: list[Job], name: str) -> list[Job]:
    return [j for j in jobs if j.source.name == name]


def test_flight_recorder_dumps_are_found_from_the_environment_and_read() -> None:
    planner, jobs = _discovered(PlanOptions(stack_dumps=1))
    (default,) = _named(jobs, "flight_recorder_list")  # torch's default, the ranks may be gone
    assert default.argv[-8:] == ("find", "/tmp", "-maxdepth", "1", "-type", "f", "-name",
                                 "nccl_trace_rank_*")
    env_job = next(j for j in _named(jobs, "environ") if j.target.process.pid == 4243)  # type: ignore[union-attr]
    follow = planner.on_result(env_job, _result("environ", _env(
        env_job, TORCH_NCCL_TRACE_BUFFER_SIZE="2000", TORCH_NCCL_DEBUG_INFO_TEMP_FILE="/var/fr/trace_")))
    (listing,) = _named(follow, "flight_recorder_list")
    assert listing.target.path == "/var/fr/trace_"
    found = b"/var/fr/trace_0\n/var/fr/trace_1\n/var/fr/trace_notes.txt\n/var/fr/trace_2\n"
    reads = planner.on_result(listing, _result("flight_recorder_list", found))
    assert [j.read for j in reads] == ["/var/fr/trace_0", "/var/fr/trace_1", "/var/fr/trace_2"]
    assert len({j.key for j in reads}) == 3 and all(j.source.max_bytes == 32 * 1024 * 1024 for j in reads)
    # the same prefix from another rank is not listed twice; a relative or odd one never
    again = planner.on_result(env_job, _result("environ", _env(
        env_job, TORCH_NCCL_DEBUG_INFO_TEMP_FILE="/var/fr/trace_", TORCH_FR_DUMP_TEMP_FILE="rel/x")))
    assert _named(again, "flight_recorder_list") == []


def test_nccl_ras_only_when_asked_and_where_the_ranks_leave_it_on() -> None:
    planner, jobs = _discovered(PlanOptions(stack_dumps=1))
    env_job = next(j for j in _named(jobs, "environ") if j.target.process.pid == 4243)  # type: ignore[union-attr]
    assert _named(planner.on_result(env_job, _result("environ", _env(env_job))), "nccl_ras") == []
    planner, jobs = _discovered(PlanOptions(stack_dumps=1, nccl_ras=True))
    env_job = next(j for j in _named(jobs, "environ") if j.target.process.pid == 4243)  # type: ignore[union-attr]
    (ras,) = _named(planner.on_result(env_job, _result("environ", _env(
        env_job, NCCL_RAS_ADDR="10.0.0.5:28100"))), "nccl_ras")
    assert ras.argv[-7:] == ("ncclras", "-t", "5", "-h", "10.0.0.5", "-p", "28100")
    assert _named(planner.on_result(env_job, _result("environ", _env(env_job))), "nccl_ras") == []
    planner, jobs = _discovered(PlanOptions(stack_dumps=1, nccl_ras=True))
    env_job = next(j for j in _named(jobs, "environ") if j.target.process.pid == 4243)  # type: ignore[union-attr]
    off = planner.on_result(env_job, _result("environ", _env(env_job, NCCL_RAS_ENABLE="0")))
    assert _named(off, "nccl_ras") == [] and any("NCCL_RAS_ENABLE=0" in n for n in
                                                 planner.discovery_json()["notes"])


def test_deep_is_opt_in_and_runs_after_each_ranks_last_dump() -> None:
    _, jobs = _discovered(PlanOptions(stack_dumps=2))
    assert _named(jobs, "cuda_gdb") == []
    planner, jobs = _discovered(PlanOptions(stack_dumps=2, deep=True))
    assert _named(jobs, "cuda_gdb") == []  # never while py-spy may still attach
    rank = next(j for j in _named(jobs, "pyspy") if j.target.process.pid == 4243)  # type: ignore[union-attr]
    (second,) = planner.on_result(rank, _result("pyspy", b"Process 4243", started_at=1.0))
    (deep,) = _named(planner.on_result(second, _result("pyspy", b"Process 4243", started_at=9.0)),
                     "cuda_gdb")
    assert deep.argv[-7:] == ("cuda-gdb", "--batch", "-nx", "-p", "4243", "-ex", "info cuda kernels")
    assert deep.argv[:4] == ("timeout", "-k", "2", "30")  # the strict per-rank limit
    server = next(j for j in _named(jobs, "pyspy") if j.target.process.pid == 4242)  # type: ignore[union-attr]
    (s2,) = planner.on_result(server, _result("pyspy", b"Process 4242"))
    assert _named(planner.on_result(s2, _result("pyspy", b"Process 4242")), "cuda_gdb") == []
    _, nostacks = _discovered(PlanOptions(stacks=False, deep=True))
    assert sorted(j.target.process.pid for j in _named(nostacks, "cuda_gdb")) == [4243, 4244]  # type: ignore[union-attr]


def test_the_manifest_states_each_pause() -> None:
    row = ResultEntry(host="h", source="cuda_gdb", key="cuda_gdb.pid4243", argv=("cuda-gdb",),
                      url=None, exit_status=0, duration_s=4.25, started_at=0.0, timed_out=False,
                      truncated=False, bytes=10, sha256=None, path="raw/h/x.txt", error=None,
                      target={"pid": 4243, "rank": "TP0"})
    rec = deep_record([row])
    assert rec["enabled"] and rec["timeout_s_per_rank"] == 30.0 and rec["max_pause_s"] == 4.25
    assert rec["ranks"] == [{"host": "h", "pid": 4243, "rank": "TP0", "paused_s": 4.25, "ok": True,
                             "error": None}]
    from pdforensics.report.collection import deep_statement

    assert deep_statement(rec) == ("--deep: cuda-gdb stopped 1 rank(s) to read their GPU kernels "
                                   "(1 read); each pause at most 30.0 s, the longest 4.25 s.")
