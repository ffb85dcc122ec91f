"""Debugger output on field artifacts: gdb `thread apply all bt` / `py-bt` (never mistaken
for py-spy), the UCX backtrace, cuda-gdb listings, `py-spy top`, and gdb that printed no stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.analysis.stacks_load import parse_stack_text, sniff_format
from pdforensics.parsers.beneath import read_beneath
from pdforensics.parsers.cuda_gdb import cuda_dump, parse_cuda_kernels
from pdforensics.parsers.native_stacks import parse_gdb, parse_ucx_backtrace
from pdforensics.parsers.pyspy_top import parse_pyspy_top

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _text(family: str, slug: str) -> str:
    return next(p for p in (FIELD / family).glob(slug + ".*") if not p.name.endswith(".meta.json")).read_text()


@pytest.mark.parametrize("slug,threads", [("gen-gdb13-thread-apply-all-bt-recv-lock", 4),
                                          ("gen-gdb13-thread-apply-all-py-bt", 4),
                                          ("gen-gdb13-py-bt-idle-http-server-control", 1),
                                          ("nccl-901-gdb-cudastreamsynchronize-glm", 1),
                                          ("nccl-1550-gdb-trtllm-allgather-hang-threads", 2)])
def test_gdb_dumps_are_gdb_not_a_broken_pyspy_dump(slug: str, threads: int) -> None:
    text = _text("gdb", slug)
    assert sniff_format(text) == "gdb"
    (dump,) = parse_stack_text(text)
    assert dump.kind == "gdb" and len(dump.threads) == threads


def test_gdb_threads_are_named_by_their_lwp_and_python_frames_are_read() -> None:
    (dump,) = parse_gdb(_text("gdb", "gen-gdb13-thread-apply-all-py-bt"))
    assert dump.pid == 24693
    kv = next(t for t in dump.threads if t.thread_id == "LWP 24735")
    assert kv.name == "python3" and kv.frames[0].function == "wait_for_kv"
    assert kv.frames[0].file.endswith("blocked.py") and kv.frames[0].line == 6
    lock = next(t for t in dump.threads if t.thread_id == "LWP 24736")
    assert lock.frames[0].function == "__enter__" and lock.frames[0].file == "<built-in>"


def test_gdb_native_frames_unnamed_ones_by_address() -> None:
    (dump,) = parse_gdb(_text("gdb", "nccl-901-gdb-ncclgroupend-launch-pager-cut"))
    fns = [f.function for f in dump.threads[0].frames]
    assert fns[0].startswith("0x00007f169e") and "cudaLaunchKernel" in fns
    assert "ncclGroupEndInternal" in fns and fns[fns.index("cudaLaunchKernel") - 1].startswith("0x")
    ncc = next(f for f in dump.threads[0].frames if f.function == "ncclLaunchKernel")
    assert (ncc.file, ncc.line) == ("enqueue.cc", 1092)


def test_a_ucx_backtrace_starts_where_the_signal_hit() -> None:
    (dump,) = parse_ucx_backtrace(_text("transfer_engine", "sglang-6694-nixl-ucx-segv-tcp-ep"))
    (t,) = dump.threads
    assert t.thread_id == "LWP 13303" and t.frames[1].function == "uct_tcp_ep_am_bcopy"
    assert not any(f.function == "ucs_handle_error" for f in t.frames)


def test_cuda_gdb_threads_of_an_nccl_kernel() -> None:
    text = _text("gdb", "nccl-558-cuda-gdb-info-cuda-threads-prims-ll")
    (k,) = parse_cuda_kernels(text)
    assert k.kernel == 0 and k.collective and k.threads == 256
    assert k.files == ("/sources/nccl/src/collectives/device/prims_ll.h",)
    (dump,) = cuda_dump(text)
    assert dump.kind == "cuda-gdb" and sum(t.count for t in dump.threads) == 256


def test_cuda_gdb_kernel_rows_in_both_releases_shapes() -> None:
    # the row shapes of NVIDIA's cuda-gdb manual (Name Args) and of an older release (Invocation)
    text = ("(cuda-gdb) info cuda kernels\n"
            "  Kernel Parent Dev Grid Status   SMs Mask    GridDim BlockDim Invocation\n"
            "*      5      -   0    6 Active 0x00000002 (4801,1,1) (64,1,1) render(nthreads=307200)\n"
            "Kernel Parent Dev Grid Status SMs Mask GridDim BlockDim Name Args\n"
            "* 1 - 0 2 Active 0x00ffffff (240,1,1) (128,1,1) ncclDevKernel_AllReduce_Sum_f32_RING_LL "
            "args=...\n")
    ks = parse_cuda_kernels(text)
    assert [(k.kernel, k.name, k.collective) for k in ks] == [
        (5, "render", False), (1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", True)]
    assert ks[1].grid == "(240,1,1)" and ks[1].status == "Active"


def test_gdb_that_printed_no_stack_is_said_so() -> None:
    b = read_beneath(_text("gdb", "nccl-857-gdb-attach-banner-no-stack"))
    assert b.debugger_no_stack == 1
    assert read_beneath(_text("gdb", "gen-gdb13-thread-apply-all-bt-recv-lock")).debugger_no_stack is None


def test_pyspy_top_screens() -> None:
    busy = parse_pyspy_top(_text("pyspy_top", "gen-pyspy043-top-busy-control"))
    assert busy is not None and not busy.idle and busy.threads == 2 and busy.samples == 700
    assert busy.hottest is not None and busy.hottest.function == "forward_batch (busy.py)"
    idle = parse_pyspy_top(_text("pyspy_top", "gen-pyspy043-top-idle-blocked"))
    assert idle is not None and idle.idle and idle.gil_pct == 0.0 and len(idle.rows) == 7
    many = parse_pyspy_top(_text("pyspy_top", "pyspy-737-top-111-threads-behind-sampling"))
    assert many is not None and many.behind_s == 20.47 and many.active_pct == 1396.41
    assert many.rows[0].function == "acquire (logging/__init__.py)" and many.rows[0].own_pct == 1048.9
