"""What SGLang scheduler stacks say about where a batch is held (sglang's source): the overlap
scheduler's main thread waiting for its forward thread, ranks waiting in different
collectives, a forward waiting for the GPU, a process that aborted while a thread handled an
exception; and a stack pasted as a bare list of frames."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.parsers.pastes import frame_list, frames_as_pyspy, unwrap_paste
from tests.support.diagnosis import diagnose_text

_OVERLAP = """\
{header}Process 4242: sglang::scheduler_TP0
Python v3.11.10 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    wait (threading.py:327)
    get (queue.py:171)
    resolve_batch_result (tp_worker_overlap_thread.py:169)
    process_batch_result_decode (scheduler.py:1300)
    process_batch_result (scheduler.py:1218)
    event_loop_overlap (scheduler.py:527)
    run_scheduler_process (scheduler.py:2264)
Thread 4250 (active): "Thread-3 (forward_thread_func)"
    __call__ (torch/_ops.py:1116)
    sample (sampler.py:88)
    forward_batch_generation (tp_worker.py:200)
    forward_thread_func_ (tp_worker_overlap_thread.py:140)
    forward_thread_func (tp_worker_overlap_thread.py:118)
"""


def test_overlap_main_thread_waits_for_the_forward_thread_which_is_the_suspect(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _OVERLAP.format(header=""), "stack.txt")
    assert d.stage == "decode_forward"  # the batch whose result it waits for is a decode batch
    assert d.suspect == "Thread-3 (forward_thread_func)"
    by_key = {c.key: c for c in d.clues}
    assert by_key["STACK_AWAITS_FORWARD_THREAD"].label == "consequence"
    assert "resolve_batch_result" in by_key["STACK_AWAITS_FORWARD_THREAD"].text
    fwd = by_key["STACK_FORWARD_THREAD"]
    assert fwd.label == "cause" and "sample (sampler.py:88)" in fwd.text  # not torch's dispatch
    # a sample alone: one instant, held or passing through cannot be told
    assert d.wedge is None


def test_the_watchdogs_dump_makes_the_held_batch_a_wedge(tmp_path: Path) -> None:
    text = "[2025-03-10 16:29:01 TP0] Pyspy dump for PID 4242:\n" + _OVERLAP.format(header="")
    d = diagnose_text(tmp_path, text, "server.log")
    assert d.wedge is True and d.stage == "decode_forward"


def test_ranks_in_different_collectives_the_one_alone_is_the_odd_one_out(tmp_path: Path) -> None:
    text = ("TP2 stuck in:\n"
            "all_reduce (torch/distributed/distributed_c10d.py:3075)\n"
            "  _sync_counts (hiradix_cache.py:196)\n"
            "  check_progress (scheduler.py:2679)\n"
            "TP0, TP1, TP3 waiting in:\n"
            "broadcast (torch/distributed/distributed_c10d.py:2974)\n"
            "  broadcast_pyobj (utils/common.py:1437)\n"
            "  recv_requests (scheduler.py:1187)\n")
    d = diagnose_text(tmp_path, text, "ranks.txt")
    causes = [c for c in d.clues if c.label == "cause"]
    assert [c.rank for c in causes] == ["TP2"] and d.suspect == "TP2"
    assert "_sync_counts (hiradix_cache.py:196)" in causes[0].text
    assert d.side == "collective"


def test_ranks_in_one_collective_name_no_suspect(tmp_path: Path) -> None:
    text = ("TP0 waiting in:\n"
            "broadcast (torch/distributed/distributed_c10d.py:2974)\n"
            "  broadcast_pyobj (utils/common.py:1437)\n"
            "  recv_requests (scheduler.py:1187)\n"
            "TP1 waiting in:\n"
            "broadcast (torch/distributed/distributed_c10d.py:2974)\n"
            "  broadcast_pyobj (utils/common.py:1437)\n"
            "  recv_requests (scheduler.py:1187)\n")
    d = diagnose_text(tmp_path, text, "ranks.txt")
    assert d.suspect is None and not [c for c in d.clues if c.label == "cause"]


def test_a_forward_in_a_stream_sync_waits_for_the_gpu(tmp_path: Path) -> None:
    text = ("cuStreamSynchronize (libcuda.so.595.71.05)\n"
            "cudaStreamSynchronize (libcudart.so.13)\n"
            "at::native::nonzero_cuda\n"
            "filter_indices (layout.py:48)\n"
            "...\n"
            "run_batch (scheduler.py:3594)\n"
            "event_loop_overlap (scheduler.py:1763)\n")
    d = diagnose_text(tmp_path, text, "stack.txt")
    c = next(c for c in d.clues if c.key == "STACK_FORWARD_WAITS_GPU")
    assert c.label == "consequence" and "cuStreamSynchronize" in c.text


def test_an_abort_while_a_thread_formats_an_exception_names_that_thread(tmp_path: Path) -> None:
    text = ("Fatal Python error: Aborted\n\n"
            "Thread 0x00007ee43dfff640 (most recent call first):\n"
            '  File "/x/sglang/srt/managers/scheduler.py", line 1419 in watchdog_thread\n'
            '  File "/usr/lib/python3.10/threading.py", line 953 in run\n\n'
            "Thread 0x00007ee43d7fe640 (most recent call first):\n"
            '  File "/usr/lib/python3.10/traceback.py", line 135 in format_exception\n'
            '  File "/x/sglang/utils.py", line 34 in get_exception_traceback\n'
            '  File "/x/sglang/srt/managers/tp_worker_overlap_thread.py", line 114 in '
            "forward_thread_func\n"
            '  File "/usr/lib/python3.10/threading.py", line 953 in run\n')
    d = diagnose_text(tmp_path, text, "fault.log")
    fatal = next(c for c in d.clues if c.key == "PYTHON_FATAL")
    assert fatal.label == "consequence"
    assert d.suspect == "Thread 0x00007ee43d7fe640 (forward_thread_func)"
    assert d.wedge is False


def test_a_frame_list_becomes_one_thread_per_titled_list() -> None:
    text = ("TP0 stuck in:\nall_reduce (torch/distributed/distributed_c10d.py:3075)\n"
            "  f (a.py:1)\n  f2 (a.py:5)\n  f3 (a.py:9)\nwhile the others wait in:\n"
            "broadcast (c10d.py:1)\n  g (b.py:2)\n  g2 (b.py:4)\n")
    assert frame_list(text)
    out = frames_as_pyspy(text)
    assert out.count("Thread (): ") == 2 and '"TP0 stuck in"' in out
    assert "    all_reduce (torch/distributed/distributed_c10d.py:3075)" in out


def test_text_that_is_not_a_frame_list_is_left_alone() -> None:
    log = ("[2025-01-01 10:00:00] Prefill batch, #new-seq: 1\n"
           "[2025-01-01 10:00:01] Decode batch, #running-req: 1\n"
           "Traceback (most recent call last):\n"
           '  File "a.py", line 3, in f\n'
           "ValueError: x\n")
    assert unwrap_paste(log) == log
    dump = 'Thread 1 (idle): "MainThread"\n    f (a.py:1)\n    g (a.py:2)\n    h (a.py:3)\n'
    assert unwrap_paste(dump) == dump  # py-spy's own dump is read as it is


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_frame_list_never_raises(text: str) -> None:
    if frame_list(text):
        assert "Thread (): " in frames_as_pyspy(text)
    else:
        assert unwrap_paste(text) is not None
