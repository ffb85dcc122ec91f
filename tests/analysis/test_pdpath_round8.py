"""Readings added from the eighth blind set (6 December): SGLang's start-up steps and its
older log prefix and crash words, a request sent through an HTTP proxy, torch's monitored
barrier naming the faulty peer, a c10d store that could not listen, and a Go fatal error cut
by another writer's line."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.journal import parse_rank
from tests.support.diagnosis import diagnose_text


def test_a_crash_after_sglangs_start_up_steps_is_at_startup_and_names_its_rank(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
              "[23:17:01 TP4] Memory pool end. avail mem=18.66 GB\n"
              "[23:17:01 TP4] Capture cuda graph begin. This can take up to several minutes.\n"
              "[23:17:08 TP4] Exception in run_tp_server:\n"
              "Traceback (most recent call last):\n"
              '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 147, '
              "in __init__\n")
    assert (d.stage, d.suspect) == ("startup", "TP4")
    assert {c.key: c.label for c in d.clues}["SCHEDULER_EXCEPTION"] == "consequence"


def test_sglangs_old_prefix_with_the_time_of_day_alone_gives_the_rank() -> None:
    assert parse_rank("[23:17:08 TP4] Exception in run_tp_server:") == "TP4"
    assert parse_rank("[23:17:08] no rank here") is None


def test_a_proxied_request_that_failed_blames_the_proxy(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
              "[2025-08-13 11:01:02] INFO:     Uvicorn running on http://0.0.0.0:25600\n"
              "[2025-08-13 11:01:03] Starting new HTTP connection (1): 172.16.37.200:3138\n"
              '[2025-08-13 11:01:03] http://172.16.37.200:3138 "GET http://0.0.0.0:25600/'
              'get_model_info HTTP/1.1" 403 3582\n')
    assert (d.stage, d.side, d.suspect) == ("startup", "host", "172.16.37.200:3138")


def test_a_direct_request_is_no_proxy(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, '[2025-08-13 11:01:03] http://127.0.0.1:30000 "GET /get_model_info '
                        'HTTP/1.1" 503 12\n')
    assert "PROXY_REQUEST_FAILED" not in {c.key for c in d.clues}


def test_a_monitored_barrier_names_the_faulty_peer(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
              "[rank3]:[E421 04:13:43.426633564 ProcessGroupGloo.cpp:143] Rank 3 successfully "
              "reached monitoredBarrier, but received errors while waiting for send/recv from "
              "rank 0. Please check rank 0 logs for faulty rank.\n"
              "[2025-04-21 04:13:43 TP3] Scheduler hit an exception: Traceback (most recent call "
              "last):\n"
              '  File "/x/sglang/srt/managers/scheduler.py", line 2056, in run_scheduler_process\n'
              "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
              '  File "/x/sglang/srt/model_executor/model_runner.py", line 187, in __init__\n')
    assert (d.side, d.suspect) == ("collective", "rank 0")
    assert not [c for c in d.clues if c.label == "cause"]  # rank 3's failure follows rank 0's


def test_a_store_that_could_not_listen_is_the_cause_of_the_refused_clients(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
              "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
              "local network address. port: 33649, useIpv6: false, code: -98, name: EADDRINUSE, "
              "message: address already in use\n"
              "[W820 18:57:52.292435752 socket.cpp:764] [c10d] The client socket has failed to "
              "connect to [localhost]:33649 (errno: 99 - Cannot assign requested address).\n")
    labels = {c.key: c.label for c in d.clues}
    assert labels["C10D_STORE_LISTEN_FAILED"] == "cause"
    assert labels["C10D_STORE_FAILURE"] == "consequence"
    assert (d.stage, d.side) == ("startup", "collective")


def test_a_go_fatal_error_cut_by_another_writer_reads_the_next_line(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
              "fatal error: 2025/06/07 12:13:19.016192 [whisper.cpp] Starting server\n"
              "concurrent map writes\n\n"
              "goroutine 20311 [running]:\n"
              "internal/runtime/maps.fatal({0x843bc9?, 0xb9a140?})\n"
              "        /usr/lib/go/src/runtime/panic.go:1058 +0x18\n"
              "main.monitorProcess({0xc00030a480, 0x1c}, 0xc00012a140, 0xc0005361f0)\n"
              "        /home/p/large-model-proxy/main.go:1083 +0x465\n", "dump.txt")
    panic = next(c for c in d.clues if c.key == "GO_PANIC")
    assert panic.text == "fatal error: concurrent map writes"
    assert d.suspect == "goroutine 20311"


def test_gdbs_py_bt_is_read_innermost_first_and_its_collective_wait_found(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "(gdb) py-bt\nTraceback (most recent call first):\n"
                      "  <built-in method allreduce of PyCapsule object at remote 0x7fb3b12c3f90>\n"
                      '  File "/x/torch/distributed/distributed_c10d.py", line 1209, in all_reduce\n'
                      "    work = group.allreduce([tensor], opts)\n"
                      '  File "/x/deepspeed/runtime/zero/stage2.py", line 1326, in allreduce_bucket\n'
                      "    dist.all_reduce(tensor_to_allreduce, group=self.dp_process_group)\n",
                      "pybt.txt")
    wait = next(c for c in d.clues if c.key == "STACK_WAITS_IN_COLLECTIVE")
    assert "<built-in allreduce>" in wait.text and "allreduce_bucket" in wait.text
    assert d.side == "collective" and d.wedge is True  # held when the dump was taken


def test_any_thread_waiting_in_a_collective_is_read(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "Current thread 0x00007ff3363ff700 (most recent call first):\n"
                      '  File "torch/testing/_internal/common_distributed.py", line 373 in _event_listener\n'
                      '  File "threading.py", line 870 in run\n\n'
                      "Thread 0x00007ff406132180 (most recent call first):\n"
                      '  File "torch/distributed/distributed_c10d.py", line 2477 in barrier\n'
                      '  File "torch/testing/_internal/distributed/rpc/rpc_test.py", line 838 in test_reinit\n',
                      "fault.txt")
    assert d.side == "collective" and "barrier" in next(
        c.text for c in d.clues if c.key == "STACK_WAITS_IN_COLLECTIVE")


def test_a_build_lock_wait_is_the_hosts(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "Process 46930: python -u main.py --deepspeed\nPython v3.11.2 (/usr/bin/python3.11)\n\n"
                      'Thread 46930 (idle): "MainThread"\n'
                      "    wait (torch/utils/file_baton.py:42)\n"
                      "    _jit_compile (torch/utils/cpp_extension.py:1522)\n"
                      "    load (torch/utils/cpp_extension.py:1284)\n", "dump.txt")
    assert (d.side, d.suspect) == ("host", "MainThread")


def test_the_model_runners_mode_places_a_unified_servers_forward(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "[2026-09-02 19:17:34 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                      '  File "/x/sglang/srt/managers/scheduler.py", line 3696, in run_batch\n'
                      "    batch_result = self.model_worker.forward_batch_generation(...)\n"
                      '  File "/x/sglang/srt/model_executor/runner/eager_runner.py", line 213, in execute\n'
                      "    return self._execute_extend(forward_batch, pp_proxy_tensors)\n")
    assert d.stage == "prefill_forward"


def test_a_servers_5xx_answers_to_generation_requests_are_consequences(tmp_path: Path) -> None:
    line = ('[2026-01-29 06:53:43] INFO:     11.251.218.253:{port} - "POST /v1/chat/completions '
            'HTTP/1.1" {status}\n')
    d = diagnose_text(tmp_path, line.format(port=45400, status="500 Internal Server Error")
                      + line.format(port=52558, status="200 OK"))
    c = next(c for c in d.clues if c.key == "SERVER_HTTP_5XX")
    assert c.label == "consequence" and d.wedge is False
    assert d.stage == "not_established"  # a request failed on the path; where, not shown
    # a probe's 503 while the server starts is its answer, not a failed request
    probe = diagnose_text(tmp_path, '[2026-01-29 06:53:43] INFO:     127.0.0.1:1 - "GET /health '
                                    'HTTP/1.1" 503 Service Unavailable\n', "probe.log")
    assert "SERVER_HTTP_5XX" not in {c.key for c in probe.clues}


def test_a_chained_exception_follows_from_the_one_printed_above_it(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "Traceback (most recent call last):\n"
                      '  File "/x/urllib3/connection.py", line 198, in _new_conn\n'
                      "    sock = connection.create_connection(\n"
                      "ConnectionRefusedError: [Errno 111] Connection refused\n\n"
                      "The above exception was the direct cause of the following exception:\n\n"
                      "Traceback (most recent call last):\n"
                      '  File "/x/urllib3/connectionpool.py", line 787, in urlopen\n'
                      "    response = self._make_request(\n"
                      "urllib3.exceptions.NewConnectionError: Failed to establish a new connection\n")
    labels = {c.text.split(":")[0]: c.label for c in d.clues if c.key == "PYTHON_EXCEPTION"}
    assert labels == {"ConnectionRefusedError": "cause",
                      "urllib3.exceptions.NewConnectionError": "consequence"}


def test_a_port_is_named_whole() -> None:
    from pdforensics.analysis.pdpath.read_collective import _names_port

    assert _names_port("failed to connect to [localhost]:33649 (errno: 99)", "33649")
    assert _names_port("to host 10.0.0.1:33649", "33649")
    assert not _names_port("failed to connect to [localhost]:336491 (errno: 99)", "33649")
