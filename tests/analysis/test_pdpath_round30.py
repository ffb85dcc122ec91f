"""Readings added from the thirtieth to thirty-second blind rounds' open sets (6 December,
session 8): a child process's traceback under multiprocessing's header; the host refusing
memory; an exception raised in a process entry's own body; the peer NCCL could not connect
to; uvicorn stopping a server that still answered requests; an OOM report cut before its
victim; a module's own exception class; vLLM's NIXL handshake and engine stats; RDMA queue
pairs failing again; a chain whose first exception is not in the paste; NVIDIA Dynamo's
words; Mooncake's store refusing a key it holds. Texts are the real artifacts or cut from
them, and each rule is also shown not to fire where it should not."""

from __future__ import annotations

from pathlib import Path

from tests.support.diagnosis import diagnose_text
from tests.support.field import field_text as _field


def test_a_scheduler_child_refused_memory_at_its_first_step(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/sglang5762-scheduler-cannot-allocate-memory.log"),
                      "t.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.text == "OSError: [Errno 12] Cannot allocate memory"
    # multiprocessing's "Process Process-6:" header names the process; ENOMEM is the host's;
    # raised in run_scheduler_process's own body: before its event loop, so at start-up
    assert (d.stage, d.side, d.suspect) == ("startup", "host", "Process-6")
    # an exception raised deeper, in the event loop, is not a start-up failure
    loop = ("Process Process-2:\nTraceback (most recent call last):\n"
            '  File "/sglang/srt/managers/scheduler.py", line 1984, in run_scheduler_process\n'
            "    scheduler.event_loop_normal()\n"
            '  File "/sglang/srt/managers/scheduler.py", line 700, in event_loop_normal\n'
            "    self.process_input_requests(recv_reqs)\n"
            "ValueError: bad request\n")
    d = diagnose_text(tmp_path, loop, "loop.log")
    assert d.stage != "startup" and d.suspect == "Process-2"


def test_nccl_names_the_peer_it_could_not_connect_to(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/sglang5594-nccl-socket-connect-abort.log"), "n.log")
    assert (d.stage, d.side) == ("startup", "collective")
    assert d.suspect == "10.0.0.82<38455>"
    # two peers refused: no one link stands out
    two = ("h:1:2 [0] socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.82<38455> "
           "failed : Connection refused\n"
           "h:1:3 [1] socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.83<38455> "
           "failed : Connection refused\n")
    assert diagnose_text(tmp_path, two, "two.log").suspect is None


def test_uvicorn_stopping_a_router_that_still_served(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("router_log/productionstack448-router-shutdown-under-load.log"),
                      "router.log")
    stopped = [c.text for c in d.labelled("consequence") if c.key == "SERVER_STOPPED"]
    assert "INFO:     Waiting for application shutdown." in stopped
    assert "INFO:     Closing engine stats scraper" in stopped
    assert (d.stage, d.side, d.wedge, d.root_cause) == ("not_established", "router", False,
                                                        "not_established")
    # a server stopped after its last request (no access line after "Shutting down"): nothing
    quiet = ('INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
             "INFO:     Shutting down\nINFO:     Waiting for application shutdown.\n"
             "INFO:     Application shutdown complete.\n")
    assert not any(c.key == "SERVER_STOPPED" for c in diagnose_text(tmp_path, quiet, "r.log").clues)


def test_an_oom_report_cut_before_its_victim_names_its_trigger(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("kernel/rlswarm463-p2pd-invoked-oom-killer-arm64.log"), "k.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "OOM_INVOKED" and (d.side, d.suspect) == ("host", "p2pd")
    # with the victim's line, that line is the cause and the trigger its consequence
    both = ("[10.0] p2pd invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0\n"
            "[10.1] Out of memory: Killed process 4242 (python3) total-vm:100kB\n")
    d = diagnose_text(tmp_path, both, "k2.log")
    causes = [c.key for c in d.labelled("cause")]
    assert "OOM_KILL" in causes and "OOM_INVOKED" not in causes
    assert any(c.key == "OOM_INVOKED" for c in d.labelled("consequence"))


def test_a_nixl_handshake_that_failed_stops_at_prefill_bootstrap(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllm26171-nixl-handshake-zmq-again-local-prefill.log"),
                      "decode.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.text == "zmq.error.Again: Resource temporarily unavailable"  # (its own class)
    assert any(c.key == "NIXL_HANDSHAKE_FAILED" for c in d.labelled("consequence"))
    assert (d.stage, d.side) == ("prefill_bootstrap", "prefill")


def test_vllm_stats_with_requests_held_and_no_token_to_the_end(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllm45649-macos-cpu-engine-stalled-zero-throughput.log"),
                      "v.log")
    stalled = [c for c in d.labelled("consequence") if c.key == "VLLM_ENGINE_STALLED"]
    assert len(stalled) == 1 and d.wedge is True and d.stage == "not_established"
    line = ("INFO 06-22 17:{m}:{s} [loggers.py:273] Engine 000: Avg prompt throughput: {p} "
            "tokens/s, Avg generation throughput: {g} tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
            "GPU KV cache usage: 1.3%\n")
    zero = [line.format(m=40, s=f"{10 * k:02d}", p="0.0", g="0.0") for k in range(4)]
    # the same spell, then tokens again: a slow spell, not a wedge
    moving = zero + [line.format(m=41, s="00", p="0.0", g="12.5")]
    d = diagnose_text(tmp_path, "".join(moving), "moving.log")
    assert not any(c.key == "VLLM_ENGINE_STALLED" for c in d.clues)
    # idle: nothing running, nothing waiting
    idle = "".join(z.replace("Running: 1", "Running: 0") for z in zero)
    assert not any(c.key == "VLLM_ENGINE_STALLED" for c in diagnose_text(tmp_path, idle, "i.log").clues)


def test_queue_pairs_failing_again_are_causes_not_each_others_consequences(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/uccl641-qp-rtr-timeout.log"), "q.log")
    assert not any("Failed to modify QP to RTR" in c.text for c in d.labelled("consequence"))
    assert d.side == "transfer_engine"


def test_a_chain_whose_first_exception_is_cut_from_the_paste(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/dynamo429-nats-serviceunavailable-traceback.txt"),
                      "t.txt")
    causes = [c.text for c in d.labelled("cause")]
    assert causes[0].startswith("nats.js.errors.ServiceUnavailableError: nats:")
    assert d.stage == "not_established"  # NVIDIA Dynamo's worker: a serving engine's path
    # the earlier exception in the text: the later one stays its consequence
    full = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n"
            "KeyError: 'x'\n\nDuring handling of the above exception, another exception "
            "occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 3, in h\n"
            "    f()\nRuntimeError: lookup failed\n")
    d = diagnose_text(tmp_path, full, "full.txt")
    assert [c.text for c in d.labelled("cause") if c.key == "PYTHON_EXCEPTION"] == ["KeyError: 'x'"]
    assert any(c.text == "RuntimeError: lookup failed" for c in d.labelled("consequence"))


def test_a_peer_the_transfer_engine_timed_out_connecting_to(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("transfer_engine/vllmascend7401-mooncake-connect-timeout.log"),
                      "te.log")
    assert d.suspect == "10.2:20033" and d.side == "transfer_engine"


def test_mooncake_refusing_a_key_it_already_holds_is_no_failure(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("transfer_engine/sglang8651-mooncake-object-already-exists.log"),
                      "store.log")
    assert not d.labelled("cause") and d.stage == "not_applicable" and d.wedge is not True
    # "failed to start put operation" is an operation, not the program starting
    assert not any(c.key == "STARTUP_FAILED" for c in d.clues)
    d = diagnose_text(tmp_path, "ERROR: EngineCore failed to start.\n", "s.log")
    assert any(c.key == "STARTUP_FAILED" for c in d.clues)


def test_ray_says_why_the_actor_died_below_the_exception(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/rlfactory8-workerdict-actor-died.txt"), "r.txt")
    cause = next(c for c in d.labelled("cause") if c.key == "RAY_ACTOR_DEAD")
    assert "Worker unexpectedly exits with a connection error code 2" in cause.text
    assert cause.suspect == "Zap04XWorkerDict_0:1"
    died = [c.text for c in d.labelled("consequence")]
    assert "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this " \
           "task." in died
    assert not any(c.text.startswith("ray.exceptions.ActorDiedError") for c in d.labelled("cause"))


def test_ctrl_c_is_the_program_interrupted_not_a_cause(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/lmdeploy1619-hang-many-requests-sigint.txt"),
                      "t.txt")
    assert not d.labelled("cause")
    assert any("KeyboardInterrupt" in c.text for c in d.labelled("consequence"))


def test_an_abort_after_an_nccl_error_is_that_errors_consequence(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/trtllmbackend159-nccl-internal-error-double-free.log"),
                      "n.log")
    assert [c.key for c in d.labelled("cause")][:1] == ["NCCL_ERROR"] and d.side == "collective"
    after = {c.key: c.text for c in d.labelled("consequence")}
    assert after["HEAP_CORRUPTION"] == "double free or corruption (fasttop)"
    assert after["NATIVE_SIGNAL"].endswith("Signal: Aborted (6)")
    # alone, glibc's heap check is the cause, and the abort after it its consequence
    alone = ("double free or corruption (fasttop)\n[h:46796] *** Process received signal ***\n"
             "[h:46796] Signal: Aborted (6)\n")
    d = diagnose_text(tmp_path, alone, "a.log")
    assert [c.key for c in d.labelled("cause")] == ["HEAP_CORRUPTION"]
    # a segfault is no self-abort: it stays a cause; an abort far below the error too
    from pdforensics.analysis.pdpath.aborts import self_aborts
    from pdforensics.analysis.pdpath.model import Clue

    err = Clue(key="NCCL_ERROR", label="cause", text="NCCL error", source="x", line=3, strength=2)
    segv = Clue(key="NATIVE_SIGNAL", label="cause", text="[h:1] Signal: Segmentation fault (11)",
                source="x", line=8, strength=3)
    far = Clue(key="NATIVE_SIGNAL", label="cause", text="[h:1] Signal: Aborted (6)",
               source="x", line=300, strength=3)
    assert [c.label for c in self_aborts([err, segv, far])] == ["cause", "cause", "cause"]


def test_tensorrt_llm_build_lines_read_as_a_log(tmp_path: Path) -> None:
    from pdforensics.parsers.logtime import parse_log_timestamp

    assert parse_log_timestamp("[06/13/2024-13:01:19] [TRT-LLM] [I] x") == 1718283679.0
    assert parse_log_timestamp("[13/40/2024-13:01:19] x") is None
    d = diagnose_text(tmp_path, _field("log/tensorrtllm1778-unused-embed-positions-info-control.log"),
                      "trt.log")
    assert not d.labelled("cause") and d.wedge is not True


def test_gdb_stopped_at_a_fatal_signal(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("gdb/tern5-gdb-segv-initcuda.txt"), "g.txt")
    cause = next(iter(d.labelled("cause")))
    assert cause.text == 'Thread 1 "python3" received signal SIGSEGV, Segmentation fault.'
    assert (d.suspect, d.wedge) == ("Thread 1", False)
    # the debugger's own stop (Ctrl-C in gdb) is no crash
    stopped = _field("gdb/tern5-gdb-segv-initcuda.txt").replace(
        "received signal SIGSEGV, Segmentation fault.", "received signal SIGINT, Interrupt.")
    d = diagnose_text(tmp_path, stopped, "i.txt")
    assert not any(c.key == "NATIVE_SIGNAL" for c in d.clues)


def test_the_kernels_hung_task_report_is_a_task_held(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("kernel/gpud117-xid45-hung-task-dstate.log"), "k.log")
    hung = next(c for c in d.labelled("consequence") if c.key == "HUNG_TASK")
    assert hung.wedge is True and hung.suspect == "cache_mgr_event:620917"
    assert hung.text.endswith("INFO: task cache_mgr_event:620917 blocked for more than 120 seconds.")


def test_amd_gpu_uncorrectable_error_is_the_devices_fault(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("kernel/rocmbuild4021-mi300x-athub-uncorrectable-aca.log"),
                      "k.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "AMD_GPU_ERROR" and "uncorrectable hardware error" in cause.text
    assert (d.side, d.suspect) == ("gpu", "0000:1c:00.0")
    # the driver's own start lines are no fault
    boot = "[    5.1] amdgpu 0000:1c:00.0: amdgpu: SMU is initialized successfully!\n" * 3
    assert not any(c.key == "AMD_GPU_ERROR" for c in diagnose_text(tmp_path, boot, "b.log").clues)


def test_a_glog_line_pasted_without_its_level_counts_when_it_says_it_failed(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "transfer_engine/sglang27730-rocm-mooncake-rdma-handshake-mismatch.log"), "te.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.text == "rdma_endpoint.cpp:472] Invalid argument: received packet mismatch,"
    assert not any("installTransport" in c.text for c in d.labelled("cause"))
    assert (d.stage, d.side) == ("kv_send", "transfer_engine")


def test_nccl_names_the_peer_a_socket_read_failed_from(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/llamafactory6849-nccl-socket-broken-pipe.log"), "n.log")
    assert d.suspect == "10.119.24.53<49901>" and d.side == "collective"


def test_vllm_finding_a_process_of_its_engine_gone(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/msswift7933-vllm-enginecore-dp1-died.txt"), "t.txt")
    died = next(c for c in d.clues if c.key == "VLLM_PROC_DIED")
    assert died.label == "cause" and died.suspect == "EngineCore_DP1"
    # the engine core being built when its worker died: start-up
    d = diagnose_text(tmp_path, _field("traceback/vllm25928-flashinfer-enginecore-init-failed.txt"),
                      "e.txt")
    assert d.stage == "startup"
    assert next(c for c in d.clues if c.key == "VLLM_PROC_DIED").suspect == "VllmWorker-0"


def test_nvidia_driver_saying_the_gpu_needs_a_reset(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("kernel/nvidia-ogkm1045-gpu0-reset-required.log"), "k.log")
    cause = next(iter(d.labelled("cause")))
    assert "Check failed: Reset required [NV_ERR_RESET_REQUIRED]" in cause.text
    assert (d.side, d.suspect) == ("gpu", "GPU0")
    assert any("NV_ERR_GPU_IN_FULLCHIP_RESET) @ rs_server.c:259" in c.text
               for c in d.labelled("consequence"))


def test_a_quoted_scrape_gets_back_the_hash_its_rendering_lost() -> None:
    from pdforensics.parsers.pastes import unwrap_paste

    quoted = ("> HELP python_gc_objects_collected_total Objects collected during gc\n"
              "> TYPE python_gc_objects_collected_total counter\n"
              '> python_gc_objects_collected_total{generation="0"} 7902.0\n')
    assert unwrap_paste(quoted).split("\n")[:2] == [
        "# HELP python_gc_objects_collected_total Objects collected during gc",
        "# TYPE python_gc_objects_collected_total counter"]
    # prose that happens to begin so is left alone
    assert unwrap_paste("> HELP wanted: the server hangs\n> after a while\n").startswith("HELP")


def test_nccl_finding_two_ranks_on_one_gpu_names_the_device(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/trtllm170-nccl-duplicate-gpu.log"), "n.log")
    assert (d.stage, d.side, d.suspect) == ("startup", "collective", "CUDA device e3000")
