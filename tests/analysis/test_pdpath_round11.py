"""Readings added from the eleventh blind set (6 December): failures of the host under NCCL
and CUDA (/dev/shm, the NVSwitch fabric, CUDA error 802, torch's "Last error:"), every step of
an NCCL error chain, a harmless NCCL warning, the OOM killer's trigger, an RDMA queue pair
that never came up, a NIXL backend's failure reported again by its agent, the shell's report
of a signal. Texts are cut from the real artifacts (tests/data/field/, round 11)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.kernel_log import OOM_INVOKED, parse_kernel_log
from pdforensics.parsers.nccl_debug import ERROR_CHAIN, read_nccl_lines
from pdforensics.parsers.transfer_engine import read_transfer_errors
from tests.support.diagnosis import diagnose_text

_SHM = ("host:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend "
        "/dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)\n"
        "host:202016:202235 [0] NCCL INFO transport/shm.cc:551 -> 2\n"
        "host:202016:202235 [0] NCCL INFO transport/shm.cc:493 -> 2\n"
        "host:202016:202240 [0] NCCL INFO misc/socket.cc:28 -> 3\n")


def test_dev_shm_too_small_is_the_hosts_and_every_chain_step_a_consequence(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _SHM)
    assert (d.side, d.suspect) == ("host", "/dev/shm")
    steps = [c.text for c in d.labelled("consequence") if c.key == "NCCL_ERROR_CHAIN"]
    assert any("shm.cc:551 -> 2" in t for t in steps) and any("shm.cc:493 -> 2" in t for t in steps)


def test_a_chain_keeps_its_steps_in_order() -> None:
    chain = [n for n in read_nccl_lines(_SHM) if n.kind == ERROR_CHAIN]
    mine = next(n for n in chain if ":202235 " in n.text)
    assert [no for no, _ in mine.steps] == [2, 3]


def test_nvls_set_up_failing_points_at_the_hosts_fabric(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "node23:12098:12141 [2] transport/nvls.cc:244 NCCL WARN Cuda failure 1 "
                      "'invalid argument'\n"
                      "node23:12098:12141 [2] NCCL INFO transport/nvls.cc:394 -> 1\n"
                      "node23:12098:12141 [2] NCCL INFO group.cc:75 -> 1 [Async thread]\n")
    assert d.side == "host"
    assert any("fabric" in c.why.lower() and c.side == "host" for c in d.labelled("cause"))


def test_torchs_last_error_is_the_cause_and_its_wrapper_the_consequence(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "  torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
                      "distributed/c10d/NCCLUtils.hpp:268, unhandled system error (run with "
                      "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
                      "  ncclSystemError: System call (e.g. socket, malloc) or external library "
                      "call failed or device error. \n"
                      "  Last error:\n"
                      "  Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size "
                      "7340384)\n"
                      "  Exception raised from create at /pytorch/torch/csrc/distributed/c10d/"
                      "NCCLUtils.hpp:268 (most recent call first):\n")
    causes = [c.text for c in d.labelled("cause")]
    assert causes and all("shared memory segment" in t for t in causes)
    assert any("DistBackendError" in c.text for c in d.labelled("consequence"))
    assert (d.side, d.suspect) == ("host", "/dev/shm")


def test_a_last_error_that_is_not_the_hosts_stays_on_the_collective(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, "
                      "remote process exited or there was a network error, NCCL version 2.21.5\n"
                      "ncclRemoteError: A call failed possibly due to a network error or a remote "
                      "process exiting prematurely.\n"
                      "Last error:\n"
                      "socketProgress: Connection closed by remote peer 10.0.0.2<54316>\n")
    assert d.side == "collective"
    assert any("Connection closed by remote peer" in c.text for c in d.labelled("cause"))


def test_cuda_802_is_the_hosts_first_report_the_cause_later_ones_consequences(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "[CUDA Bandwidth Test] - Starting...\nRunning on...\n\n"
                      "cudaGetDeviceProperties returned 802\n-> system not yet initialized\n"
                      "CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "
                      '"cudaSetDevice(currentDevice)" \n')
    assert d.side == "host"
    assert [c.text for c in d.labelled("cause")] == [
        "cudaGetDeviceProperties returned 802 -> system not yet initialized"]
    assert any("bandwidthTest.cu:256" in c.text for c in d.labelled("consequence"))


def test_no_infiniband_warning_is_harmless(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open "
                      "libibverbs.so[.1]\nNCCL version 2.9.6+cuda11.2\n"
                      "# nThread 1 nGpus 1 minBytes 8 maxBytes 2147483648 step: 2(factor) warmup "
                      "iters: 10 iters: 100 validation: 0 \n")
    assert not d.labelled("cause")
    assert d.stage != "startup"  # nccl-tests' "warmup iters" is no server's warm-up


def test_the_oom_killers_trigger_is_a_consequence_and_the_victim_named_with_its_pid(
        tmp_path: Path) -> None:
    text = ("[ 2448.628970] Out of memory: Killed process 16014 (cicc) total-vm:3069420kB, "
            "anon-rss:2111980kB\n"
            "[ 2457.202332] VLLM::EngineCor invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_"
            "MOVABLE|__GFP_COMP), order=0, oom_score_adj=0\n")
    assert [e.process for e in parse_kernel_log(text).events if e.kind == OOM_INVOKED] == [
        "VLLM::EngineCor"]
    d = diagnose_text(tmp_path, text)
    assert (d.side, d.suspect) == ("host", "16014 (cicc)")
    assert any("invoked oom-killer" in c.text for c in d.labelled("consequence"))


def test_a_queue_pair_that_never_came_up_is_the_cause_of_the_timeouts_after_it() -> None:
    errs = read_transfer_errors(
        "[224] [coro_connection.hpp:209] ibverbs init qp failed: End of file conn_id  1\n\n"
        "E1111 08:02:15.854331   924 master_client.cpp:146] RPC call failed: Connection timed "
        "out\n")
    assert [(e.kind, e.label) for e in errs] == [("qp_setup", "cause"), ("error", "consequence")]


def test_a_nixl_backends_failure_reported_again_by_its_agent(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "E0000 00:00:1762238119.118504 2368741 gpunetio_backend.cpp:1105] Can't "
                      "register memory for unknown device 3\n"
                      "E1104 06:35:19.118512 2368741 nixl_agent.cpp:473] registerMem: "
                      "registration failed for the specified or all potential backends\n")
    assert (d.stage, d.side) == ("startup", "transfer_engine")
    assert [c.text[-30:] for c in d.labelled("cause")] == ["register memory for unknown device 3"[-30:]]
    assert any("nixl_agent" in c.text for c in d.labelled("consequence"))


def test_the_shells_signal_report_is_how_the_process_ended(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      ": [Error] /tmp/dlslime/csrc/engine/rdma/rdma_context.cpp: init: Line154: "
                      "Failed to create QP\n"
                      'INFO:     127.0.0.1:42844 - "POST /distserve/p2p_initialize HTTP/1.1" 200 OK\n'
                      "Segmentation fault (core dumped)\n")
    assert d.side == "transfer_engine"
    assert [c.key for c in d.labelled("consequence")] == ["PROCESS_SIGNALLED"]
