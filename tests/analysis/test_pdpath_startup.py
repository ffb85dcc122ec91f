"""Failures while a program starts: its own "failed to start" lines, a start-up wait that never
ends, gloo's full mesh that never formed, two ranks on one GPU, NCCL's error-code summary
against its WARN detail, and a message wrapped onto a second line."""

from __future__ import annotations

from pathlib import Path

from pdforensics.triage.run import triage_paths


def _diag(tmp_path: Path, text: str, name: str = "run.log"):  # type: ignore[no-untyped-def]
    p = tmp_path / name
    p.write_text(text)
    a = triage_paths([str(p)]).analysis
    assert a is not None and a.diagnosis is not None
    return a.diagnosis


def _labels(d) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {c.key: c.label for c in d.clues}


def test_a_failure_of_a_program_that_says_it_failed_to_start_is_at_startup(tmp_path: Path) -> None:
    d = _diag(tmp_path, "ERROR 07-24 07:59:37 [core.py:12] CUDA out of memory. Tried to allocate 2 GiB\n"
                        "RuntimeError: Engine core initialization failed. See root cause above.\n")
    assert d.stage == "startup"
    assert _labels(d)["STARTUP_FAILED"] == "consequence"


def test_a_failure_with_no_start_up_words_is_not_placed_at_startup(tmp_path: Path) -> None:
    d = _diag(tmp_path, "ERROR 07-24 07:59:37 [core.py:12] CUDA out of memory. Tried to allocate 2 GiB\n")
    assert d.stage != "startup" and "STARTUP_FAILED" not in _labels(d)


def test_a_start_up_wait_to_the_end_of_the_log_is_a_hang(tmp_path: Path) -> None:
    wait = "DEBUG 07-24 07:59:{s} [utils.py:475] Waiting for 1 local, 0 remote core engine proc(s) to start.\n"
    d = _diag(tmp_path, "".join(wait.format(s=s) for s in (37, 47, 57)))
    assert (d.stage, d.wedge) == ("startup", True)
    # the same wait followed by the engine coming up is no hang
    d = _diag(tmp_path, "".join(wait.format(s=s) for s in (37, 47, 57)) +
              "INFO 07-24 08:00:07 [api_server.py:1] Application startup complete.\n")
    assert "STARTUP_WAITING" not in _labels(d)


def test_gloo_mesh_failure_after_a_loopback_fallback_names_that_rank(tmp_path: Path) -> None:
    d = _diag(tmp_path,
              "[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback\n"
              "        address as fallback. Manually set the network interface with GLOO_SOCKET_IFNAME\n"
              "[rank8] Gloo connectFullMesh failed ... timed out connecting: SO_ERROR: Connection "
              "refused, remote=[127.0.0.1]:14215\n")
    assert (d.stage, d.side, d.suspect) == ("startup", "collective", "rank8")
    assert _labels(d)["GLOO_LOOPBACK_FALLBACK"] == "cause"
    assert _labels(d)["GLOO_MESH_FAILED"] == "consequence"


def test_a_loopback_fallback_alone_is_no_failure(tmp_path: Path) -> None:
    d = _diag(tmp_path, "[rank0] Warning: Unable to resolve hostname to a (local) address. Using "
                        "the loopback\n[rank0] step 1 loss 0.5\n")
    assert not [c for c in d.clues if c.label == "cause"]


_INIT = ("host:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x{c} rank {r} nranks 2 cudaDev 0 "
         "nvmlDev 0 busId {bus} commId 0xaa9becea043c4e6c - Init START\n")


def test_two_ranks_of_one_communicator_on_one_gpu(tmp_path: Path) -> None:
    text = (_INIT.format(pid=42, c="7a12", r=0, bus="100000") +
            _INIT.format(pid=43, c="397e", r=1, bus="100000") +
            "RuntimeError: NCCL error ncclCommunicator.cpp:90 'invalid usage (run with "
            "NCCL_DEBUG=WARN for details)'\n")
    d = _diag(tmp_path, text)
    dup = [c for c in d.clues if c.key == "NCCL_DUPLICATE_GPU"]
    assert len(dup) == 2 and all(c.label == "cause" for c in dup)
    assert (d.stage, d.suspect) == ("startup", "busId 100000")


def test_ranks_on_their_own_gpus_are_not_duplicates(tmp_path: Path) -> None:
    text = _INIT.format(pid=42, c="7a12", r=0, bus="100000") + _INIT.format(
        pid=43, c="397e", r=1, bus="200000")
    assert "NCCL_DUPLICATE_GPU" not in _labels(_diag(tmp_path, text))


def test_nccls_summary_is_the_consequence_of_its_warn_lines(tmp_path: Path) -> None:
    d = _diag(tmp_path,
              "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
              "\n"
              "transport/nvls.cc:287 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory\n"
              "  of size 2097152 : CUDA error 401 'the operation cannot be performed in the present "
              "state'.\n")
    by_line = {c.line: c for c in d.clues if c.label in ("cause", "consequence")}
    assert by_line[1].label == "consequence"
    assert by_line[3].label == "cause"
    # the wrapped second line is the same message: a cause, on the collective side
    assert by_line[4].label == "cause" and by_line[4].side == "collective"
    assert d.side == "collective"


def test_nccl_tests_wrong_values_are_a_cause_and_a_clean_run_is_past_startup(
        tmp_path: Path) -> None:
    table = ("#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
             "    33554432       8388608     float     sum      -1    19.56  1715.44  1.00      0\n")
    failed = _diag(tmp_path, table + " Out of bounds values : 2 FAILED\n Avg bus bandwidth    : 128.9\n",
                   "failed.log")
    assert _labels(failed)["NCCL_TEST_WRONG_DATA"] == "cause"
    assert (failed.side, failed.wedge) == ("collective", False)
    ok = _diag(tmp_path, "host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                         "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5\n"
               + table + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.5\n", "ok.log")
    assert _labels(ok)["NCCL_TEST_PASSED"] == "progress"
    # the run went through: its bootstrap lines are no start-up under way
    assert ok.stage == "not_applicable" and ok.wedge is False


def test_an_older_sglangs_retraction_words_are_the_kv_pool_not_a_gpu_oom(tmp_path: Path) -> None:
    d = _diag(tmp_path, "[2025-03-07 21:49:33 TP13] Decode out of memory happened. #retracted_reqs: 1, "
                        "#new_token_ratio: 0.4481 -> 0.5881\n")
    keys = _labels(d)
    assert "KV_POOL_FULL" in keys and "OUT_OF_MEMORY" not in keys


def test_an_unstamped_line_before_a_stamped_one_comes_first(tmp_path: Path) -> None:
    # NCCL's own lines carry no time; the scheduler's traceback that follows them does
    d = _diag(tmp_path,
              "node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to "
              "10.0.0.4<56849> returned 113(No route to host) errno 115(Operation now in progress)\n"
              "node5:240:240 [6] NCCL INFO init.cc:1837 -> 2\n"
              "[2025-02-24 14:09:34 TP14] Scheduler hit an exception: Traceback (most recent call last):\n"
              '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1816, in run_scheduler_process\n'
              "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
              '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 187, in __init__\n')
    assert d.side == "collective" and d.stage == "startup"
    assert "NCCL WARN" in d.clues[d.claims[0].clues[0]].text
