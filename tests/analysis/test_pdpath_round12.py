"""Readings added from the twelfth blind set (6 December): Google Cloud Logging's severity and
time before each line, SGLang 0.2's "Exception in ModelTpServer:", FlashInfer's "CUDA Error:",
a CUDA graph capture failing at start-up, Python's chain line, and the detokenizer's crash on
the way back. Texts are cut from the real artifacts (tests/data/field/, round 12)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.reason import diagnose
from pdforensics.parsers.logprefix import strip_prefixes
from pdforensics.parsers.logtime import parse_log_timestamp
from tests.support.diagnosis import diagnose_text


def test_cloud_loggings_severity_and_time_are_a_prefix() -> None:
    line = ("ERROR 2026-06-15T14:10:59.392128409Z [2026-06-15 14:10:59 TP7] Scheduler hit an "
            "exception: Traceback (most recent call last):")
    got = strip_prefixes(line)
    assert (got.text, got.rank) == ("Scheduler hit an exception: Traceback (most recent call "
                                    "last):", "TP7")
    assert parse_log_timestamp(line) == parse_log_timestamp("2026-06-15T14:10:59.392128409Z x")
    assert parse_log_timestamp("ERRORS 2026-06-15T14:10:59Z x") is None  # no severity word


def test_a_traceback_under_cloud_logging_prefixes_is_read_as_one(tmp_path: Path) -> None:
    text = "".join(f"ERROR 2026-06-15T14:10:59.3921{i:05d}Z {ln}\n" for i, ln in enumerate((
        "[2026-06-15 14:10:59 TP7] Scheduler hit an exception: Traceback (most recent call last):",
        'File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2704, in '
        "run_scheduler_process",
        "scheduler.event_loop_overlap()",
        'File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1691, in '
        "get_next_batch_to_run",
        "new_batch = self.get_new_batch_prefill()")))
    d = diagnose_text(tmp_path, text)
    assert d.suspect == "TP7"
    # the frames are a traceback's, not five error lines
    assert not [c for c in d.clues if c.key == "LOG_ERROR"]
    assert [c.key for c in d.labelled("consequence")] == ["SCHEDULER_EXCEPTION"]


def test_an_old_tp_servers_crash_line_follows_flashinfers_cuda_error(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "[gpu_id=0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, "
                      "cache hit rate: 0.00%, #running-req: 0, #queue-req: 0\n"
                      "CUDA Error: no kernel image is available for execution on the device (209) "
                      "/tmp/flashinfer/include/flashinfer/sampling.cuh: line 544\n"
                      "Exception in ModelTpServer:\n")
    assert d.stage == "prefill_forward"
    assert [c.key for c in d.labelled("cause")] == ["CUDA_ERROR"]
    assert "SCHEDULER_EXCEPTION" in {c.key for c in d.labelled("consequence")}


def test_a_cuda_graph_capture_that_failed_is_at_startup_and_the_chain_line_a_consequence(
        tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      '  File "/opt/conda/lib/python3.10/site-packages/sgl_kernel/moe.py", line 58, '
                      "in moe_fused_gate\n"
                      "    return torch.ops.sgl_kernel.moe_fused_gate.default(\n"
                      "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
                      "\n\nDuring handling of the above exception, another exception occurred:\n\n"
                      "Traceback (most recent call last):\n"
                      '  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/model_executor/'
                      'cuda_graph_runner.py", line 336, in __init__\n'
                      "    self.capture()\n")
    assert d.stage == "startup"
    assert any(c.key == "PYTHON_CHAINED" for c in d.labelled("consequence"))
    assert any("stream is capturing" in c.text for c in d.labelled("cause"))


def test_sglangs_capture_failed_line_is_a_start_up_failure(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "[2026-01-02 10:00:00 TP0] Load weight end. type=LlamaForCausalLM\n"
                      "[2026-01-02 10:00:05 TP0] Exception: Capture cuda graph failed: "
                      "RuntimeError when making fake tensor call\n")
    assert d.stage == "startup"
    assert any("Capture cuda graph failed" in c.text for c in d.labelled("consequence"))


def test_the_detokenizers_crash_is_on_the_way_back(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path,
                      "[2026-05-29 12:21:03] DetokenizerManager hit an exception: Traceback (most "
                      "recent call last):\n"
                      '  File "/sgl/python/sglang/srt/managers/detokenizer_manager.py", line 358, '
                      "in handle_batch_token_id_out\n"
                      "    self._decode_batch_token_id_output(recv_obj)\n"
                      '  File "/sgl/python/sglang/srt/managers/detokenizer_manager.py", line 195, '
                      "in _grouped_batch_decode\n"
                      "    return [\n"
                      "AttributeError: 'TiktokenTokenizer' object has no attribute "
                      "'all_special_ids'\n")
    assert d.stage == "stream_back"
    assert any("all_special_ids" in c.text for c in d.labelled("cause"))


def test_a_thread_caught_waiting_in_a_collective_is_held_unless_its_role_moves(
        tmp_path: Path) -> None:
    """One dump of a rank waiting in a collective (no other evidence): held when the dump was
    taken, a wedge. Beside a counter of its role rising, the wait is a moment of a working
    forward: no wedge."""
    d = diagnose_text(tmp_path,
                      'Thread 0x00007ff406132180 (most recent call first):\n'
                      '  File "torch/distributed/distributed_c10d.py", line 2050 in all_reduce\n'
                      '  File "vllm/distributed/communication_op.py", line 30 in tensor_model_'
                      'parallel_all_reduce\n', "fault.txt")
    assert d.wedge is True
    wait = next(c for c in d.clues if c.key == "STACK_WAITS_IN_COLLECTIVE")
    moving = Clue("COUNTER_ROSE", "progress", "sglang:generation_tokens_total rose 6 -> 10 in 4 s",
                  "metrics", role=wait.role, strength=2)
    assert diagnose([wait, moving]).wedge is not True
