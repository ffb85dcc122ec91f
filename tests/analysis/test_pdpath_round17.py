"""Readings added from the seventeenth blind round's open set (6 December, session 5): vLLM's
hint "If you are running out of memory, consider ..." is no out-of-memory error; NCCL refusing
to be captured in a CUDA graph is at start-up; two faulthandler dumps interleaved in one
terminal are said to be so, and the words of their frames still place the crash; NCCL lines
whose host:pid:tid the launcher cut off are a log. Texts are cut from the real artifacts."""

from __future__ import annotations

from pathlib import Path

from pdforensics.triage.read import read_path
from tests.support.diagnosis import diagnose_text

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def test_a_hint_about_running_out_of_memory_is_not_an_out_of_memory_error(tmp_path: Path) -> None:
    hint = ("(VllmWorkerProcess pid=116058) INFO 07-08 13:05:31 model_runner.py:928] CUDA graphs "
            "can take additional 1~3 GiB memory per GPU. If you are running out of memory, "
            "consider decreasing `gpu_memory_utilization` or enforcing eager mode.\n")
    d = diagnose_text(tmp_path, hint, "worker.log")
    assert not any(c.key == "OUT_OF_MEMORY" for c in d.clues)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    d = diagnose_text(tmp_path, oom, "worker2.log")
    assert any(c.key == "OUT_OF_MEMORY" for c in d.labelled("cause"))
    quoted = "gpu-a sglang-decode[4202]: Cuda failure 'out of memory'\n"
    d = diagnose_text(tmp_path, quoted, "decode.log")
    assert any(c.key == "OUT_OF_MEMORY" for c in d.clues)


def test_nccl_refusing_a_cuda_graph_capture_is_at_start_up(tmp_path: Path) -> None:
    text = (FIELD / "nccl" / "vllm6201-nccl-graph-capture-warn.log").read_text()
    d = diagnose_text(tmp_path, text, "worker.log")
    assert (d.stage, d.side) == ("startup", "collective")
    cause = next(c for c in d.labelled("cause"))
    assert "NCCL cannot be captured in a graph" in cause.text


def test_interleaved_dumps_are_said_so_and_their_words_still_place_the_crash(
        tmp_path: Path) -> None:
    path = FIELD / "faulthandler" / "gpustack5553-sglang-tp2-nccl-init-segfault-interleaved.txt"
    art = read_path(str(path))
    assert art.kind == "log" and "stacks" not in art.kinds  # its stacks were not read ...
    assert art.unread_stacks is not None and "interleaved" in art.unread_stacks  # ... and why
    d = diagnose_text(tmp_path, path.read_text(), "tp.log")
    assert (d.stage, d.side) == ("startup", "collective")  # ncclCommInitRank, mixed twice
    assert next(c for c in d.labelled("cause")).key == "PYTHON_FATAL"


def test_nccl_lines_without_their_host_pid_tid_are_a_log(tmp_path: Path) -> None:
    text = (FIELD / "nccl" / "nccltests245-dmabuf-info-harmless.log").read_text()
    p = tmp_path / "nccl.log"
    p.write_text(text)
    art = read_path(str(p))
    assert art.kind == "log" and art.error is None
    d = diagnose_text(tmp_path, text, "nccl2.log")
    assert d.wedge is False and not d.labelled("cause")


def test_the_ends_of_processes_are_consequences(tmp_path: Path) -> None:
    """sglang 531: custom all-reduce refused on GPUs without peer access, then torch's exit
    warnings and the old controller's "Initialization failed" (start-up); vLLM 11651: torch's
    process group never destroyed."""
    text = (FIELD / "sglang_log" / "sglang531-4090-custom-allreduce-p2p.log").read_text()
    d = diagnose_text(tmp_path, text, "server.log")
    assert (d.stage, d.side) == ("startup", "collective")
    ends = [c for c in d.labelled("consequence") if c.key in ("PROCESS_EXIT_WARNING",
                                                                "SERVER_INIT_FAILED")]
    assert {c.key for c in ends} == {"PROCESS_EXIT_WARNING", "SERVER_INIT_FAILED"}
    text = (FIELD / "nccl" / "vllm11651-nccl-service-thread-teardown.log").read_text()
    d = diagnose_text(tmp_path, text, "teardown.log")
    assert not d.labelled("cause")  # only ends: no cause invented
    assert any(c.key == "PROCESS_EXIT_WARNING" for c in d.labelled("consequence"))


def test_a_clean_nccl_teardown_raises_nothing(tmp_path: Path) -> None:
    """NCCL's service threads print "Connection closed by localRank N" at every exit, clean or
    not: read as a peer closing its connection they made a healthy run DEGRADED with a
    critical NCCL_NETWORK_ERROR (session 5, found and withdrawn before it landed)."""
    import json

    from click.testing import CliRunner

    from pdforensics.cli import main

    log = ("node1:1452:1452 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
           "node1:1452:1553 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1000 - "
           "Init COMPLETE\n"
           "node1:1452:1553 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n"
           "node1:1453:1554 [1] NCCL INFO [Service thread] Connection closed by localRank 1\n")
    (tmp_path / "nccl.log").write_text(log)
    res = CliRunner().invoke(main, ["triage", "--json", str(tmp_path / "nccl.log")])
    doc = json.loads(res.output)
    assert doc["verdict"] not in ("WEDGED", "DEGRADED", "OUTAGE"), doc["verdict"]
    assert not [f for f in doc["findings"] if f["severity"] == "critical"]
    assert not (doc["diagnosis"] or {}).get("wedge")
