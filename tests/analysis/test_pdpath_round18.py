"""Readings added from the eighteenth blind round's open set (6 December, session 6): vLLM's
requests waiting for remote KV and its NIXL connector's failures; an exception printed on a
line of its own; a launcher waiting for shards "to be ready"; NCCL's shared-memory segment
failing right after its rings are set up; a cancelled asyncio task. And from the nineteenth
round's open set: receives pending with none done, a crash UCX's handler caught outside UCX,
a goroutine dump a logger indented, NCCL failures passing up through init in a server, the
driver's report after RmInitAdapter, torch's wrapper of an NCCL error. Texts are the real
artifacts or cut from them."""

from __future__ import annotations

from pathlib import Path

from tests.support.diagnosis import diagnose_text
from tests.support.field import FIELD
from tests.support.field import field_text as _field


def test_a_request_still_waiting_for_remote_kv_while_no_transfer_completes(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllmascend5660-decode-waiting-for-remote-kvs.log"),
                      "decode.log")
    assert (d.stage, d.side, d.wedge) == ("decode_transfer_wait", "transfer_engine", True)
    assert d.suspect == "chatcmpl-7817d6df-206c-4aca-bfac-c43df205506f"
    assert {c.key for c in d.labelled("consequence")} == {"VLLM_WAITING_FOR_REMOTE_KVS",
                                                          "KV_CONNECTOR_IDLE"}
    # without the connector's count the wait points at prefill, which never sent the KV;
    # one line is no held request
    one = ("DEBUG 01-06 12:06:06 [v1/core/sched/scheduler.py:348] cmpl-1 is still in "
           "WAITING_FOR_REMOTE_KVS state.\n")
    d = diagnose_text(tmp_path, one, "decode2.log")
    wait = next(c for c in d.clues if c.key == "VLLM_WAITING_FOR_REMOTE_KVS")
    assert (wait.side, wait.wedge, wait.suspect) == ("prefill", None, None)


def test_a_nixl_failure_follows_the_exception_printed_on_its_own_line(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllm42895-nixl-block-size-handshake.log"), "d.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "EXCEPTION_LINE" and cause.text.startswith("AssertionError: Local block")
    assert (d.stage, d.side) == ("decode_transfer_wait", "decode")  # its reports agree on both
    assert all(c.key == "NIXL_TRANSFER_FAILED" for c in d.labelled("consequence"))


def test_an_exception_line_of_a_traceback_is_not_read_again_on_its_own(tmp_path: Path) -> None:
    text = ("INFO starting\n"
            "Traceback (most recent call last):\n"
            '  File "/app/x.py", line 3, in run\n'
            "    raise ValueError('bad shape')\n"
            "ValueError: bad shape\n")
    d = diagnose_text(tmp_path, text, "x.log")
    assert not any(c.key == "EXCEPTION_LINE" for c in d.clues)
    alone = "INFO request done\nValueError: bad shape\nINFO request done\n"
    d = diagnose_text(tmp_path, alone, "y.log")
    assert [c.key for c in d.labelled("cause")] == ["EXCEPTION_LINE"]
    assert d.wedge is not True


def test_shards_waiting_to_be_ready_to_the_end_of_the_log_are_a_start_up_hang(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/tgi1838-shards-stuck-waiting-ready.log"), "tgi.log")
    assert (d.stage, d.wedge) == ("startup", True)
    assert [c.key for c in d.labelled("consequence")] == ["STARTUP_WAITING"]
    ready = ("INFO Waiting for shard to be ready... rank=1\n" * 3
             + "INFO Shard ready in 12.1s rank=1\nINFO Starting Webserver\n")
    d = diagnose_text(tmp_path, ready, "tgi2.log")
    assert not any(c.key == "STARTUP_WAITING" for c in d.clues) and d.wedge is not True


def test_a_shared_memory_segment_failing_after_the_rings_is_the_host_at_start_up(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/nccl290-shm-posix-fallocate-no-space.log"), "n.log")
    assert (d.stage, d.side, d.suspect) == ("startup", "host", "/dev/shm")
    # the same failure with no set-up line above it is placed nowhere (a CI test's NCCL)
    d = diagnose_text(tmp_path, _field("nccl/ci-infra490-nccl-shm-no-space.log"), "ci.log")
    assert (d.stage, d.side) == ("not_applicable", "host")


def test_a_cancelled_task_is_a_consequence(tmp_path: Path) -> None:
    text = _field("router_log/lightllm708-pd-master-kv-move-timeout.log")
    d = diagnose_text(tmp_path, text, "master.log")
    cancelled = next(c for c in d.clues if c.text.startswith("asyncio.exceptions.CancelledError"))
    assert cancelled.label == "consequence" and "cancelled" in cancelled.why


# -- the nineteenth round's open set (AK, 3/12 before tuning) ---------------------------------


def test_receives_pending_with_none_completed_wait_at_decode_side_not_established(
        tmp_path: Path) -> None:
    text = _field("log/vllmascend5404-layerwise-decode-recv-zero.log")
    d = diagnose_text(tmp_path, text, "worker.log")
    assert (d.stage, d.side) == ("decode_transfer_wait", "not_established")
    assert {c.key for c in d.labelled("consequence")} == {"KV_RECV_PENDING"}


def test_a_crash_ucx_caught_outside_its_libraries_is_the_processs_own(tmp_path: Path) -> None:
    text = _field("faulthandler/sglang8011-tp2-5090-faulthandler-ucx-segv.txt")
    d = diagnose_text(tmp_path, text, "tp1.txt")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "NATIVE_SIGNAL" and "Caught signal 11" in cause.text
    assert d.suspect == "sglang::scheduler_TP1" and d.side == "not_established"
    assert not any(c.key.startswith("TRANSFER_") for c in d.clues)
    # the same report with the faulting frame in UCX's transport library: the transfer engine's
    inside = ("[gpu1:5296:0:5781] Caught signal 11 (Segmentation fault: address not mapped)\n"
              "==== backtrace (tid:   5781) ====\n"
              " 0  /opt/ucx/lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7f0658057774]\n"
              " 1  /lib/x86_64-linux-gnu/libc.so.6(+0x42520) [0x7f0659042520]\n"
              " 2  /opt/ucx/lib/ucx/libuct_ib.so.0(uct_rc_mlx5_iface_progress+0x3d) [0x7f06]\n")
    d = diagnose_text(tmp_path, inside, "tp2.txt")
    assert next(iter(d.labelled("cause"))).key == "TRANSFER_CRASH"
    assert d.side == "transfer_engine"


def test_a_goroutine_dump_a_logger_indented_is_read_with_its_panic(tmp_path: Path) -> None:
    path = FIELD / "go" / "llmdfma572-dualpods-controller-nil-panic.txt"
    from pdforensics.triage.read import read_path
    art = read_path(str(path))
    assert art.kind == "goroutines" and art.goroutines[0].thread_id == "263"
    d = diagnose_text(tmp_path, path.read_text(), "controller.log")
    panic = next(iter(d.labelled("cause")))
    assert panic.key == "GO_PANIC" and "nil pointer dereference" in panic.text
    assert "[panicked in " in panic.text and "getNominalServerProvidingPod" in panic.text
    assert (d.suspect, d.wedge) == ("goroutine 263", False)


def test_a_goroutine_cut_after_its_function_line_keeps_that_frame(tmp_path: Path) -> None:
    text = _field("go/comply100-sigquit-build-hang-goroutines.txt")
    d = diagnose_text(tmp_path, text, "comply.txt")
    assert d.suspect == "goroutine 1"
    assert "render.Build" in next(iter(d.labelled("cause"))).text


def test_nccl_shm_failure_in_a_serving_engine_passes_up_through_init(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/kserve3791-vllm-tp2-nccl-devshm.log"), "w.log")
    assert (d.stage, d.side, d.suspect) == ("startup", "host", "/dev/shm")
    first, second = (c for c in d.clues if c.key == "NCCL_WARN")
    # one thread's two WARN lines, a long host prefix alike: the second follows from the first
    assert (first.label, second.label) == ("cause", "consequence")
    # nccl-tests failing through init.cc is no server starting
    d = diagnose_text(tmp_path, _field("nccl/nccl1338-nvls-invalid-argument-h800.log"), "t.log")
    assert d.stage == "not_applicable"


def test_the_gpu_init_report_follows_rminitadapter_and_the_bus_id_is_as_printed(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("kernel/rpipcie480-rtx8000-rminitadapter-dmesg.log"),
                      "dmesg.log")
    assert d.suspect == "0000:01:00.0" and d.side == "gpu"
    assert {c.key for c in d.labelled("consequence")} == {"GPU_INIT_REPORT"}


def test_torchs_nccl_error_wrapper_follows_nccls_own_warning(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/raylightning24-nccl-p2p-ipc-unsupported.log"),
                      "ray.log")
    wrapper = next(c for c in d.clues if "NCCL error in: " in c.text)
    assert wrapper.label == "consequence"
    assert any("failed to open CUDA IPC handle" in c.text for c in d.labelled("cause"))


# -- the twentieth round's open set (AM, 3/12 before tuning) ----------------------------------


def test_a_cuda_error_the_nccl_watchdog_met_names_its_rank_and_no_side(tmp_path: Path) -> None:
    text = _field("nccl/vllm2682-ray-tp8-nccl-watchdog-cuda-unknown.log")
    d = diagnose_text(tmp_path, text, "worker.log")
    # vLLM's Ray worker prefix names the engine: a server's failure, its stage not established
    assert (d.stage, d.side, d.suspect) == ("not_established", "not_established", "Rank 7")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "CUDA_ERROR" and "watchdog thread terminated" in cause.text
    assert not any(c.line == cause.line for c in d.labelled("consequence"))  # a line is one
    # the same failure in a program that names no serving engine is off any request path
    plain = text.replace("(RayWorkerVllm pid=5304)", "")
    assert "Vllm" not in plain
    assert diagnose_text(tmp_path, plain, "plain.log").stage == "not_applicable"


def test_a_timeout_error_is_a_wait_that_ran_out(tmp_path: Path) -> None:
    text = _field("traceback/vllm35104-shm-broadcast-dequeue-timeout.txt")
    d = diagnose_text(tmp_path, text, "engine.txt")
    timeout = next(c for c in d.clues if c.text.startswith("TimeoutError"))
    assert timeout.label == "consequence" and timeout.wedge is True
    # vLLM's shared-memory broadcast names the engine: on a request path, where not said
    assert (d.stage, d.wedge) == ("not_established", True)
    assert not d.labelled("cause")


# -- the twenty-first round's open set (AO, 3/12 before tuning; one control alarmed) ----------


def test_transfer_errors_a_benchmark_got_past_raise_no_alarm(tmp_path: Path) -> None:
    from pdforensics.triage.run import triage_paths

    path = FIELD / "log" / "ucx8684-harmless-ibv-create-cq-errors.log"
    result = triage_paths([str(path)])
    assert result.analysis is not None
    assert not [f.key for f in result.analysis.findings if f.severity == "critical"]
    d = result.analysis.diagnosis
    assert d is not None and d.wedge is False and not d.labelled("cause")
    # the same errors with no results after them are the transfer engine's failure
    text = path.read_text().split("\n# OSU")[0]
    d = diagnose_text(tmp_path, text, "ucx.log")
    assert next(iter(d.labelled("cause"))).key == "TRANSFER_ERROR"


def test_a_crash_ucx_reported_without_a_backtrace_is_the_processs(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/trtllm674-k8s-triton-trtllm-bus-error.log"), "t.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "NATIVE_SIGNAL" and "Caught signal 7" in cause.text
    assert not any(c.key.startswith("TRANSFER_") for c in d.clues)


def test_open_mpis_signal_report_names_the_process_and_the_transport_set_up(
        tmp_path: Path) -> None:
    path = FIELD / "log" / "triton7293-ucx-mm-iface-bus-error.txt"
    from pdforensics.triage.read import read_path
    assert read_path(str(path)).kind == "log"  # was: not a format triage reads
    d = diagnose_text(tmp_path, path.read_text(), "triton.txt")
    assert (d.stage, d.side, d.wedge) == ("startup", "transfer_engine", False)
    assert d.suspect == "triton-inference-server-7cd84c8f4b-wzsk9:00030"
    assert "Signal: Bus error (7)" in next(iter(d.labelled("cause"))).text


def test_a_module_that_cannot_be_imported_fails_the_start(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/lmcachevllm60-modulenotfound-experimental.txt"),
                      "engine.txt")
    assert d.stage == "startup"
    assert next(iter(d.labelled("cause"))).text.startswith("ModuleNotFoundError")


def test_kubectl_describe_events_an_eviction_and_the_containers_it_stopped(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/kserve3792-modelmesh-emptydir-evicted.log"), "d.txt")
    assert (d.side, d.wedge) == ("host", False)
    assert [c.key for c in d.labelled("cause")] == ["K8S_EVICTED"]
    assert {c.key for c in d.labelled("consequence")} == {"K8S_KILLING"}
    pending = ("Events:\n  Type     Reason            Age   From               Message\n"
               "  ----     ------            ----  ----               -------\n"
               "  Warning  FailedScheduling  2m    default-scheduler  0/4 nodes are available: "
               "4 Insufficient nvidia.com/gpu.\n")
    d = diagnose_text(tmp_path, pending, "describe.txt")
    assert (d.stage, d.side) == ("startup", "host")


# -- the twenty-second round's open set (AQ, 3/12 before tuning) ------------------------------


def test_a_backtrace_without_addresses_is_gdbs_and_its_thread_in_the_engine_named(
        tmp_path: Path) -> None:
    path = FIELD / "gdb" / "mooncake1986-memcpy-worker-sigsegv.txt"
    from pdforensics.triage.read import read_path
    assert read_path(str(path)).kind == "stacks"  # was: not a format triage reads
    d = diagnose_text(tmp_path, path.read_text(), "bt.txt")
    assert (d.side, d.suspect) == ("transfer_engine", "mooncake::MemcpyWorkerPool::workerThread")
    assert "#1  mooncake::MemcpyWorkerPool::workerThread ()" in next(iter(d.labelled("cause"))).text


def test_a_cuda_error_names_the_rank_as_torch_printed_it(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/sglang13234-kimi-k2-watchdog-ima.txt"), "t.txt")
    assert d.suspect == "rank6"


def test_prefill_freeing_kv_no_decode_read_is_a_consequence_at_the_send(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllm25562-nixl-expired-kv-blocks-prefill.log"),
                      "engine.log")
    assert {c.key for c in d.labelled("consequence")} == {"NIXL_KV_EXPIRED"}
    # the connector freeing them is prefill's (session 7: three threads agree on the side)
    assert (d.stage, d.side, d.wedge) == ("kv_send", "prefill", False)


def test_an_errors_chain_of_causes_names_the_innermost(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/dynamo1188-etcd-connection-refused.log"), "w.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "ERROR_CHAIN_ROOT" and "Connection refused (os error 111)" in cause.text
    heads = [c for c in d.labelled("consequence") if c.key == "ERROR_CHAIN_HEAD"]
    assert heads and "Application shutdown with error" in heads[0].text


# -- the twenty-third round's open set (AS, 6/12 before tuning) -------------------------------


def test_a_start_up_failure_line_is_read_in_a_log_holding_a_traceback(tmp_path: Path) -> None:
    path = FIELD / "log" / "vllm22532-nixl-lmcache-enginecore-start-fail.log"
    from pdforensics.triage.read import read_path
    assert read_path(str(path)).kind == "stacks"  # (its traceback makes it one)
    d = diagnose_text(tmp_path, path.read_text(), "engine.log")
    assert d.stage == "startup"
    assert any("EngineCore failed to start." in c.text for c in d.labelled("consequence"))


def test_a_pod_that_is_not_running_is_a_consequence_at_start_up(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/kubeflow794-tfserving-gpu-pod-pending.txt"), "p.txt")
    assert (d.stage, d.side) == ("startup", "host")
    assert [c.key for c in d.labelled("cause")] == ["K8S_FAILEDSCHEDULING"]
    assert [c.key for c in d.labelled("consequence")] == ["K8S_POD_NOT_RUNNING"]
    text = _field("log/k8sdeviceplugin430-triton-pod-pending-describe.txt")
    d = diagnose_text(tmp_path, text, "describe.txt")
    assert d.stage == "startup"
    assert [c.text for c in d.labelled("consequence")] == ["PodScheduled   False"]
    looping = ("NAME       READY   STATUS             RESTARTS   AGE\n"
               "router-0   1/1     Running            0          12m\n"
               "decode-0   0/1     CrashLoopBackOff   7          12m\n"
               "prefill-0  1/1     Running            0          12m\n")
    d = diagnose_text(tmp_path, looping, "pods.txt")
    assert [(c.key, c.stage) for c in d.labelled("consequence")] == [("K8S_POD_NOT_RUNNING", None)]
