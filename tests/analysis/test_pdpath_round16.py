"""Readings added from the sixteenth blind round's open set (6 December, session 5): Mooncake
Store's transfers are a KV cache store's, not prefill sending to decode (start-up while the
store starts, else not established); the peer that refused a connection is the suspect; an
RDMA async error event is a fault at any glog level; a native stack waiting in
torch.distributed's TCPStore waits at the rendezvous; failed IB completions from one peer name
it. Texts are cut from the real artifacts (tests/data/field/)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.transfer_engine import read_transfer_errors
from tests.support.diagnosis import diagnose_text

# sglang 17195: HiCache's Mooncake Store warm-up put refused by a peer not yet listening
_STORE_WARMUP = (
    "I0116 07:02:58.081576 2594569 pybind_client.cpp:218] Mounting segment: 13421772800 bytes\n"
    "[2026-01-16 07:02:59 TP4] Mooncake store setup successfully.\n"
    "E0116 07:02:59.408227 2594575 transfer_metadata_plugin.cpp:909] SocketHandShakePlugin: "
    "connect()10.0.0.30:15041: Connection refused [111]\n"
    "E0116 07:02:59.408258 2594575 transfer_task.cpp:572] Failed to open segment for "
    "endpoint='10.0.0.30:15041'\n"
    "E0116 07:02:59.408260 2594575 client.cpp:1601] Failed to submit transfer operation\n")

# LMCache 1993: the store's transfers fail while serving
_STORE_SERVING = (
    "E1125 01:42:29.248446 13170 rdma_transport.cpp:336] Memory region not registered by any "
    "active device(s): 0x12c180000000\n"
    "E1125 01:42:29.248477 13170 transfer_task.cpp:510] Failed to submit all transfers, error "
    "code is AddressNotRegistered\n")


def test_a_store_failing_while_it_starts_is_at_start_up_and_names_the_refusing_peer(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _STORE_WARMUP, "hicache.log")
    assert (d.stage, d.side, d.suspect) == ("startup", "transfer_engine", "10.0.0.30:15041")


def test_a_store_failing_while_serving_is_not_placed_on_the_pd_path(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _STORE_SERVING, "lmcache.log")
    assert (d.stage, d.side) == ("not_established", "transfer_engine")
    # the same rdma_transport error without the store's lines is prefill sending KV
    alone = read_transfer_errors(_STORE_SERVING.split("\n")[0] + "\n")
    assert [e.stage for e in alone] == ["kv_send"]


def test_an_rdma_async_error_event_is_a_fault_at_warning_level() -> None:
    line = ("W0419 19:17:25.260430 97620 worker_pool.cpp:368] Worker: Received context async "
            "event local access violation work queue error for context mlx5_0\n")
    got = read_transfer_errors(line)
    assert [(e.label, e.level) for e in got] == [("cause", "E")]
    quiet = line.replace("async event local access violation work queue error", "a note")
    assert read_transfer_errors(quiet) == ()  # a warning alone, no error after it


FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def test_a_rank_waiting_in_the_tcpstore_waits_at_the_rendezvous(tmp_path: Path) -> None:
    bt = (FIELD / "gdb" / "pytorch129367-tcpstore-get-gdb.txt").read_text()  # rank 3's gdb bt
    d = diagnose_text(tmp_path, bt, "rank3-gdb.txt")
    assert (d.stage, d.side, d.wedge, d.suspect) == ("startup", "collective", True, None)
    wait = next(c for c in d.labelled("consequence") if c.key == "NATIVE_THREAD_STORE")
    assert "c10d::TCPStore::doGet(std::string const&)" in wait.text
    assert not wait.text.startswith("?")  # a backtrace without its thread header


def test_failed_ib_completions_from_one_peer_name_it(tmp_path: Path) -> None:
    line = ("gh-3714u15:7038:7053 [0] ib_plugin.c:1007 NCCL WARN NET/IB : Got completion from "
            "peer 10.1.32.3<{port}> with error 5, opcode 0, len 0, vendor err 249\n")
    d = diagnose_text(tmp_path, line.format(port=42519) + line.format(port=54891), "nccl.log")
    assert d.suspect is not None and d.suspect.startswith("10.1.32.3")
    other = line.format(port=1).replace("10.1.32.3", "10.1.32.4")
    d = diagnose_text(tmp_path, line.format(port=42519) + other, "nccl2.log")
    assert d.suspect is None  # two peers: no one link stands out


def test_a_scheduler_caught_inside_a_cuda_driver_call_is_held_there(tmp_path: Path) -> None:
    dump = (FIELD / "pyspy" / "sglang33642-pd-decode-cumoduleloaddata-hang.txt").read_text()
    d = diagnose_text(tmp_path, dump, "decode-pyspy.txt")  # sglang 33642: cuModuleLoadData
    assert (d.stage, d.side, d.wedge) == ("decode_forward", "decode", True)
    assert d.suspect == "fused_dsa_target_verify_metadata"  # the SGLang code that made the call
    cause = next(c for c in d.labelled("cause") if c.key == "STACK_IN_CUDA_DRIVER")
    assert "cuModuleLoadData (libcuda.so.590.48.01)" in cause.text
    # a synchronize is a wait for the GPU; a kernel launch or a copy is a busy forward's
    # steady state (a healthy --native dump catches threads there): neither is this
    for call in ("cuStreamSynchronize", "cuLaunchKernel", "cuMemcpyHtoDAsync_v2"):
        other = dump.replace("cuModuleLoadData (libcuda", f"{call} (libcuda")
        d = diagnose_text(tmp_path, other, f"decode-{call}.txt")
        assert not any(c.key == "STACK_IN_CUDA_DRIVER" for c in d.clues), call
        assert d.wedge is not True, call


def test_eagle_s_steps_place_a_traceback() -> None:
    from pdforensics.analysis.pdpath.place import frames_stage

    spec = ["forward_batch_speculative_generation", "run_batch", "event_loop_normal"]
    assert frames_stage(["forward_target_extend", *spec], [], None) == "prefill_forward"
    assert frames_stage(["forward_draft_extend_after_decode", *spec], [], None) == "decode_forward"
    assert frames_stage(["forward_draft_extend", *spec], [], None) == "prefill_forward"
    assert frames_stage(spec, [], None) is None  # run_batch alone: the role decides, none here


def test_gloo_s_abort_in_the_bootstrap_queue(tmp_path: Path) -> None:
    """sglang 37909: gloo aborts on a size mismatch inside pop_bootstrapped's all-reduce; the
    pasted frames leave some line numbers out; the peer then sees its connection closed."""
    text = (FIELD / "traceback" / "sglang37909-prefill-bootstrap-gloo-collective-mismatch.log"
            ).read_text()
    d = diagnose_text(tmp_path, text, "prefill.log")
    cause = next(c for c in d.labelled("cause"))
    assert "Received data size doesn't match expected size" in cause.text
    went = next(c for c in d.clues if "Connection closed by peer" in c.text)
    assert went.label == "consequence" and went.stage == "prefill_bootstrap"  # its frames


def test_a_frame_line_without_its_line_number_is_a_frame() -> None:
    from pdforensics.analysis.pdpath.traceback_lines import FRAME as WALK_FRAME
    from pdforensics.parsers.tracebacks import parse_traceback_block

    lines = ['File ".../disaggregation/prefill.py", in pop_bootstrapped',
             'File ".../disaggregation/utils.py", line 199, in poll_and_all_reduce']
    t = parse_traceback_block(lines)
    assert t is not None and [(f.function, f.line) for f in t.frames] == [
        ("poll_and_all_reduce", 199), ("pop_bootstrapped", None)]
    assert WALK_FRAME.match(lines[0]) is not None
    assert WALK_FRAME.match('File "x.py" in f') is None  # no comma: not Python's frame line
