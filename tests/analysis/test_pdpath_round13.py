"""Readings added from the thirteenth blind set (6 December): a crash handler's C stack after
"Fatal Python error" (the faulting frames the cause, the thread the suspect, the fatal error
its consequence), SGLang's accuracy benchmark summary, UCX loaded at the wrong version, a
queue pair failure met by perftest. Texts are cut from the real artifacts (tests/data/field/)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.transfer_engine import read_transfer_errors
from pdforensics.triage.read import read_path
from tests.support.diagnosis import diagnose_text

_C_STACK = ("Fatal Python error: Segmentation fault\n\n"
            '  File "<unknown>", line 0, in pthread_kill\n'
            '  File "<unknown>", line 0, in gsignal\n'
            '  File "<unknown>", line 0, in cuEventQuery\n'
            '  File "<unknown>", line 0, in uct_cuda_base_iface_event_fd_arm\n'
            '  File "<unknown>", line 0, in ucp_worker_arm\n'
            '  File "<unknown>", line 0, in nixlUcxWorker::arm() const\n'
            '  File "<unknown>", line 0, in nixlUcxSharedThread::run()\n'
            '  File "<unknown>", line 0, in __clone\n')


def test_a_c_stack_after_the_fatal_error_names_where_it_faulted(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _C_STACK, "crash.txt")
    assert (d.stage, d.side, d.suspect) == ("kv_send", "transfer_engine",
                                            "nixlUcxSharedThread::run()")
    cause = next(c for c in d.labelled("cause") if c.key == "NATIVE_CRASH")
    assert cause.text.startswith('File "<unknown>", line 0, in cuEventQuery')  # past the signal
    assert any(c.key == "PYTHON_FATAL" for c in d.labelled("consequence"))


def test_the_crash_text_is_read_although_no_python_thread_is_in_it(tmp_path: Path) -> None:
    p = tmp_path / "crash.txt"
    p.write_text(_C_STACK)
    art = read_path(str(p))
    assert art.error is None and art.kind == "log"


def test_without_a_c_stack_the_fatal_error_stays_the_cause(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, "Fatal Python error: Segmentation fault\n\n"
                                "Current thread 0x00007f00 (most recent call first):\n"
                                '  File "/x/model.py", line 12 in forward\n', "crash.txt")
    assert [c.key for c in d.labelled("cause")] == ["PYTHON_FATAL"]


def test_an_accuracy_benchmarks_summary_is_a_finished_run(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "$ python few_shot_gsm8k.py --port 8000\n"
                      "100%|████████████████████████████| 200/200\n"
                      "Accuracy: 0.780\nInvalid: 0.000\nLatency: 8.718 s\n"
                      "Output throughput: 1927.685 token/s\n", "bench.log")
    assert d.wedge is False and not d.labelled("cause")
    assert any(c.key == "BENCH_EVAL_DONE" for c in d.clues)


def test_an_accuracy_line_alone_is_no_benchmark(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, "[2026-01-01 10:00:00] Accuracy: 0.5 of the draft model\n"
                                "[2026-01-01 10:00:01] Decode batch, #running-req: 1\n")
    assert not any(c.key == "BENCH_EVAL_DONE" for c in d.clues)


def test_ucx_at_the_wrong_version_is_a_transfer_engine_cause() -> None:
    errs = read_transfer_errors(
        "[1745994234.385141] [host:711260:0]     ucp_context.c:1774 UCX  WARN  UCP version is "
        "incompatible, required: 1.18, actual: 1.12 (release 1)\n"
        "[1745994234.385141] [host:711260:0]     ucp_context.c:1774 UCX  WARN  something else\n")
    assert [(e.kind, e.label) for e in errs] == [("version", "cause")]


def test_perftests_queue_pair_failure_is_read_on_the_rdma_side(tmp_path: Path) -> None:
    """RDMA is the transfer engine's side in the reading's vocabulary, whichever program (here
    perftest's ib_send_bw) met the failure; the one device the text names is the suspect."""
    d = diagnose_text(tmp_path,
                      "$ ib_send_bw -d mlx5_0 -x 3 10.0.0.2\n"
                      " Send BW Test\n Device         : mlx5_0\n"
                      " Number of qps   : 1\n"
                      "Failed to modify QP 1399 to RTR\n"
                      " Unable to Connect the HCA's through the link\n")
    assert (d.side, d.suspect) == ("transfer_engine", "mlx5_0")


# the fourteenth blind set (6 December): what sits beneath the KV transfer


def test_a_nic_drivers_first_failure_on_its_device_is_the_cause(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "[   12.925245] mlx5_core 0000:03:00.0: enabling device (0000 -> 0002)\n"
                      "[   13.672173] mlx5_core 0000:03:00.0: handle_hca_cap failed\n"
                      "[   14.059052] mlx5_core 0000:03:00.0: mlx5_load_one failed with error "
                      "code -22\n"
                      "[   14.059582] mlx5_core: probe of 0000:03:00.0 failed with error -22\n",
                      "dmesg.log")
    assert (d.side, d.suspect) == ("host", "0000:03:00.0")
    assert [c.text[-24:] for c in d.labelled("cause")] == ["00.0: handle_hca_cap failed"[-24:]]
    assert len([c for c in d.labelled("consequence") if c.key == "NIC_DRIVER_FAILED"]) == 2


def test_a_verbs_completion_status_and_an_unreadable_device_are_rdma_causes() -> None:
    errs = read_transfer_errors(
        "[2020-08-11 06:53:47.169719] rdma.c:3858:nvmf_rdma_log_wc_status: *ERROR*: Error on CQ "
        "0x1fec4e0, (qp state 3 ibv_state 6) request 0x1396, type DATA, status: (10): remote "
        "access error\n"
        "ibpanic: [1323906] main: stat of IB device 'mlx5_8' failed: No such file or directory\n")
    assert [(e.kind, e.label, e.detail) for e in errs] == [
        ("rdma_completion", "cause", "remote access error"),
        ("device", "cause", "mlx5_8: No such file or directory")]


def test_nvidia_smis_table_and_listing_are_read(tmp_path: Path) -> None:
    table = ("+-------------------------------+----------------------+----------------------+\n"
             "|   1  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |                    0 |\n"
             "| N/A   29C    P0   ERR! / 250W |    593MiB / 16160MiB |      0%      Default |\n"
             "+-------------------------------+----------------------+----------------------+\n")
    listing = ("nvidia-smi -L\n"
               "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)\n"
               "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-d8594bd4-0fc3-8595-e355-7c98138f3b95)\n")
    for name, text in (("smi.txt", table), ("smi-l.txt", listing)):
        p = tmp_path / name
        p.write_text(text)
        art = read_path(str(p))
        assert art.error is None and art.kind == "log", name
        d = diagnose_text(tmp_path, text, name)
        assert not d.labelled("cause") and d.wedge is not True  # a listing is no failure


def test_after_stdterminate_the_exceptions_message_not_the_c_stack_is_the_cause(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
                      "  what():  [enforce fail at gloo/transport/tcp/pair.cc:446] op.preamble."
                      "length <= op.nbytes. 8 vs 4\n"
                      "Fatal Python error: Aborted\n\n"
                      '  File "<unknown>", line 0, in abort\n'
                      '  File "<unknown>", line 0, in __gnu_cxx::__verbose_terminate_handler()\n'
                      '  File "<unknown>", line 0, in std::terminate()\n', "crash.txt")
    assert not [c for c in d.clues if c.key == "NATIVE_CRASH"]
    assert any("enforce fail" in c.text for c in d.labelled("cause"))


def test_a_gdb_backtrace_of_a_cpp_throw_names_the_caller_of_the_throwing_library(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "(gdb) bt\n"
                      "#0  0x00007f6e1ffc7944 in _Unwind_GetRegionStart () from /lib/x86_64-linux-"
                      "gnu/libgcc_s.so.1\n"
                      "#1  0x00007f6e199c9a49 in __gxx_personality_v0 () from /lib/x86_64-linux-"
                      "gnu/libstdc++.so.6\n"
                      "#2  0x00007f678c7d7448 in asio::detail::do_throw_error (err=..., location="
                      '0x7f678c9ba7d7 "connect") at /usr/local/include/asio/detail/impl/'
                      "throw_error.ipp:63\n"
                      "#3  0x00007f678c7d128b in asio::detail::throw_error (location=0x7f678c9ba7d7"
                      ' "connect", err=...) at /usr/local/include/asio/detail/throw_error.hpp:50\n'
                      "#4  mooncake::TcpTransport::startTransfer (this=<optimized out>, slice=0x7f47"
                      "49e95f60) at /src/mooncake-transfer-engine/src/transport/tcp_transport/"
                      "tcp_transport.cpp:474\n", "bt.txt")
    assert (d.side, d.suspect, d.wedge) == ("transfer_engine",
                                            "mooncake::TcpTransport::startTransfer", False)
    cause = next(c for c in d.labelled("cause") if c.key == "NATIVE_THROW")
    assert "do_throw_error" in cause.text and "startTransfer (this=" in cause.text
    assert [c.key for c in d.labelled("consequence")] == ["NATIVE_THROW_UNWIND"]


def test_many_throwing_threads_are_each_read_and_only_the_first_few_quoted(
        tmp_path: Path) -> None:
    """A dump an attacker made of thousands of throwing threads costs one split of its text:
    the first few throws quote their gdb lines, the rest are named by function."""
    blocks = "".join(
        f'Thread {n} (Thread 0x7f{n:04x} (LWP {1000 + n}) "w{n}"):\n'
        f"#0  0x00007f6e in __cxa_throw () from /lib/libstdc++.so.6\n"
        f"#1  0x00007f6f in app::Worker{n}::run (this=0x1) at w.cpp:{n}\n"
        for n in range(1, 41))
    d = diagnose_text(tmp_path, blocks, "bt.txt")
    throws = [c for c in d.clues if c.key == "NATIVE_THROW"]
    assert len(throws) == 40
    quoted = [c for c in throws if c.text.startswith("#")]
    assert len(quoted) == 8 and "app::Worker1::run (this=0x1)" in quoted[0].text
