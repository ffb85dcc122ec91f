"""Readings added from the eighteenth blind round's open set (6 December, session 6): vLLM's
requests waiting for remote KV and its NIXL connector's failures; an exception printed on a
line of its own; a launcher waiting for shards "to be ready"; NCCL's shared-memory segment
failing right after its rings are set up; a cancelled asyncio task. Texts are the real
artifacts or cut from them."""

from __future__ import annotations

from pathlib import Path

from tests.support.diagnosis import diagnose_text

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _field(path: str) -> str:
    return (FIELD / path).read_text()


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
