"""Readings added from the twenty-fourth and twenty-fifth blind rounds' open sets (6 December,
session 7): a Rust router's panic while it starts; uvicorn's handler exception and curl's
error; the pod a pasted ``kubectl logs`` names; a benchmark's own warm-up; NCCL's collective
trace with one rank posting other arguments; a recovered net/http handler panic; vLLM's
pre-0.8 log prefix; vLLM's KV connector loading; glog's error lines;
a NATS frontend with no responder; SGLang's later words for a prefill transfer failure. Texts
are the real artifacts or cut from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.parsers.nccl_coll import read_coll_mismatches
from tests.support.diagnosis import diagnose_text
from tests.support.field import field_text as _field


def test_a_rust_router_panic_after_its_start_lines_is_a_startup_crash(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("router_log/sglang7619-router-startup-runtime-drop-panic.log"),
                      "router.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "RUST_PANIC"
    assert cause.text.startswith("Cannot drop a runtime in a context where blocking")
    assert (d.stage, d.side, d.suspect, d.wedge) == ("startup", "router", "thread '<unnamed>'",
                                                     False)
    # the old format quotes its message on the panic line; after requests it is no start-up
    old = ("2025-06-25 15:01:45  INFO sglang_router_rs::server: Initializing router on 0.0.0.0:30000\n"
           "2025-06-25 15:02:00  INFO smg::middleware: finished processing request method=POST "
           "uri=/generate status_code=200\n"
           "thread 'tokio-runtime-worker' panicked at 'called `Option::unwrap()` on a `None` "
           "value', src/router.rs:412:18\n")
    d = diagnose_text(tmp_path, old, "router2.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.text == "called `Option::unwrap()` on a `None` value"
    assert d.suspect == "thread 'tokio-runtime-worker'" and d.stage != "startup"


def test_an_asgi_exception_on_a_router_fails_dispatch_and_curl_sees_it_cut(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "router_log/productionstack747-router-asgi-exception-no-max-tokens.log"), "router.log")
    assert [c.key for c in d.labelled("cause")] == ["ASGI_EXCEPTION"]
    assert (d.stage, d.side, d.wedge) == ("router_dispatch", "router", False)
    # the pod a pasted "kubectl logs -f POD" says the lines come from
    assert d.suspect == "pd-deployment-router-6589f888d6-zm9cb"
    curl = next(c for c in d.labelled("consequence") if c.key == "CLIENT_HTTP_ERROR")
    assert curl.text.startswith("curl: (18)")
    # curl's own usage errors are the client's, not a failure upstream
    d = diagnose_text(tmp_path, "2025-01-01 00:00:00 ERROR upstream gone\n"
                                "curl: (3) URL using bad/illegal format\n", "c.log")
    assert not any(c.key == "CLIENT_HTTP_ERROR" for c in d.clues)


def test_a_pod_named_after_the_cause_is_not_its_suspect(tmp_path: Path) -> None:
    text = ("ERROR:    Exception in ASGI application\n"
            "$ kubectl logs -n prod router-5f6d7-abcde\n"
            "INFO: nothing\n")
    d = diagnose_text(tmp_path, text, "x.log")
    assert d.suspect is None


def test_a_benchmark_that_completed_requests_is_past_its_warm_up(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("load/sglang5571-bench-serving-50-of-50-ok.log"), "b.log")
    assert d.stage == "not_applicable" and d.wedge is not True
    assert not d.labelled("cause")


def test_one_rank_posting_other_collective_arguments_is_the_suspect(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/nccl147-ddp-broadcast-count-mismatch-rank0.log"),
                      "nccl.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "NCCL_COLL_MISMATCH" and "count 25503912 datatype 6" in cause.text
    assert (d.side, d.wedge) == ("collective", True)
    assert d.suspect == "learnfair062:32615:32615 [0] NCCL INFO Broadcast"


def _coll(pid: int, dev: int, count: int, op: str = "0", nranks: int = 4) -> str:
    return (f"node1:{pid}:{pid} [{dev}] NCCL INFO AllReduce: opCount {op} sendbuff 0x7f00 "
            f"recvbuff 0x7f00 count {count} datatype 7 op 0 root 0 comm 0x55{pid} "
            f"[nranks={nranks}] stream 0x56")


def test_collective_trace_agreement_and_undecidable_splits() -> None:
    same = "\n".join(_coll(100 + r, r, 4096) for r in range(4))
    assert read_coll_mismatches(same) == ()
    odd = "\n".join(_coll(100 + r, r, 4096 if r != 2 else 8) for r in range(4))
    [mm] = read_coll_mismatches(odd)
    assert mm.writer == "node1:102:102 [2] NCCL INFO AllReduce" and mm.odd[0][0] == 3
    # two against two: which side is odd is not decidable
    split = "\n".join(_coll(100 + r, r, 4096 if r < 2 else 8) for r in range(4))
    assert read_coll_mismatches(split) == ()
    # more processes than the group has: several groups of one size, not comparable
    many = "\n".join(_coll(100 + r, r % 4, 4096 if r != 5 else 8) for r in range(8))
    assert read_coll_mismatches(many) == ()
    # a part of the group seen: only a clear minority (3 of 8 seen, 1 odd: a third)
    part = "\n".join(_coll(100 + r, r, 4096 if r != 0 else 8, nranks=8) for r in range(3))
    assert len(read_coll_mismatches(part)) == 1
    half = "\n".join(_coll(100 + r, r, 4096 if r % 2 else 8, nranks=8) for r in range(4))
    assert read_coll_mismatches(half) == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(1, 9), st.sampled_from(["0", "1"])),
                max_size=12))
def test_collective_trace_reader_never_names_a_majority(rows: list[tuple[int, int, str]]) -> None:
    text = "\n".join(_coll(100 + pid, pid, count, op, nranks=8) for pid, count, op in rows)
    for mm in read_coll_mismatches(text):
        group = [(p, c) for p, c, o in rows if o == mm.op_count]
        odd = {int(line.split(":")[1]) - 100 for _no, line in mm.odd}
        assert 0 < len(odd) < len(group) - len(odd)


def test_net_http_recovered_handler_panic_is_the_cause(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("go/mcrouter603-go-nil-default-route-panic.txt"), "g.txt")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "GO_PANIC" and "http: panic serving 172.17.0.1:38104" in cause.text
    assert "net/http recovered" in cause.why and d.wedge is False


def test_vllm_old_prefix_traceback_is_read(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "traceback/dynamo331-vllm-specdec-initialize-nixl-not-implemented.log"), "w.log")
    cause = next(iter(d.labelled("cause")))
    assert cause.key == "PYTHON_EXCEPTION"
    assert cause.text == "NotImplementedError: Method 'initialize_nixl' is not implemented."


def test_vllm_kv_connector_loading_is_decode_transfer_wait(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("traceback/vllmascend13934-decode-start-load-kv-crash.txt"),
                      "w.log")
    assert d.stage == "decode_transfer_wait"


def test_glog_error_lines_are_read_as_one_failure(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "transfer_engine/mooncake2253-master-ha-etcd-sigstop-lease.log"), "master.log")
    [cause] = d.labelled("cause")
    assert "error=keep alive channel closed" in cause.text
    assert {c.line for c in d.labelled("consequence")} == {3, 4}  # the I-line is no error
    # a glog-looking line inside a sentence, or an info line, is none
    d = diagnose_text(tmp_path, "see E0101 00:00:00.1 1 x.cc:1] in the docs\n"
                                "I0101 00:00:00.100000  1 x.cc:1] fine\n", "y.log")
    assert not d.labelled("cause")


def test_no_responders_is_a_dispatch_refusal_each_time(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "router_log/dynamo732-frontend-no-responders-dead-instance.log"), "f.log")
    assert (d.stage, d.side, d.wedge) == ("router_dispatch", "router", False)
    assert not d.labelled("cause")  # the instance that went away is the cause: not here
    assert {c.key for c in d.labelled("consequence")} == {"ROUTER_REFUSED_NO_WORKER"}


@pytest.mark.parametrize("line", [
    "Prefill transfer failed for request rank=0 req.rid='5b02' with exception boom",
    "Prefill transfer failed for request rank=0 req.rid='5b02' req.bootstrap_room=7 with "
    "exception boom",
])
def test_prefill_transfer_failed_in_both_releases_words(tmp_path: Path, line: str) -> None:
    d = diagnose_text(tmp_path, line + "\n", "p.log")
    assert any(c.key == "PREFILL_TRANSFER_FAILED" and c.role == "prefill" for c in d.clues)


def test_old_nccl_lines_without_its_name_are_read(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/nccltests15-bootstrap-connect-timed-out.log"),
                      "nccl.log")
    [cause] = d.labelled("cause")
    assert cause.key == "NCCL_WARN" and "Call to connect failed : Connection timed out" in cause.text
    assert d.side == "collective"
    assert any(c.key == "NCCL_PEER_CLOSED" for c in d.labelled("consequence"))
    # a file in the new format keeps its "NCCL INFO" lines only: a bare INFO is another's
    mixed = ("h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2\n"
             "h:1:2 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out\n")
    d = diagnose_text(tmp_path, mixed, "m.log")
    assert not any(c.key == "NCCL_WARN" for c in d.clues)


def test_an_error_chain_without_a_warn_names_its_innermost_failing_call(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/pytorch131781-nccl-bootstrap-socket-einprogress.log"),
                      "nccl.log")
    causes = d.labelled("cause")
    assert {c.key for c in causes} == {"NCCL_CALL_FAILED"}
    assert all("misc/socket.cc:505 -> 2 (Operation now in progress)" in c.text for c in causes)
    assert len(causes) == 3  # one per rank whose chain starts there
    # a WARN naming the failure keeps the chain its consequences
    warned = ("h:1:2 [0] NCCL WARN Net : Connect to 10.0.0.2<4242> failed : Connection refused\n"
              "h:1:2 [0] NCCL INFO misc/socket.cc:505 -> 2 (Operation now in progress)\n"
              "h:1:2 [0] NCCL INFO bootstrap.cc:275 -> 2\n")
    d = diagnose_text(tmp_path, warned, "w.log")
    assert not any(c.key == "NCCL_CALL_FAILED" for c in d.clues)


def test_mooncake_glog_errors_point_at_the_transfer_engine(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "transfer_engine/mooncake2827-ssd-offload-phantom-replica-invalid-key.log"), "m.log")
    assert d.side == "transfer_engine"
    cause = next(iter(d.labelled("cause")))
    assert "file_storage.cpp:731] Key not found" in cause.text
    other = "E0323 09:34:39.531279  3922 my_server.cpp:48] lost the thing\n" * 2
    d = diagnose_text(tmp_path, other, "o.log")
    assert d.side != "transfer_engine"


def test_kv_freed_early_then_read_by_decode_makes_the_release_the_cause(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/awsdoeks84-nixl-kv-lease-expired-stale-read.log"),
                      "prefill.log")
    [cause] = d.labelled("cause")
    assert cause.key == "NIXL_KV_EXPIRED" and cause.line == 1 and "read them afterwards" in cause.why
    assert (d.stage, d.side) == ("kv_send", "prefill")
    # no decode read after the release: it stays a consequence (decode never fetched them)
    d = diagnose_text(tmp_path, _field("log/vllm25562-nixl-expired-kv-blocks-prefill.log"), "p.log")
    assert all(c.label == "consequence" for c in d.clues if c.key == "NIXL_KV_EXPIRED")
    assert d.side == "prefill"


def test_a_log_grepped_from_several_files_is_read_without_the_names(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "transfer_engine/vllmascend15420-mooncake-force-freed-before-decode-pull.log"), "p.log")
    assert (d.stage, d.side, d.wedge) == ("kv_send", "prefill", False)
    freed = [c for c in d.clues if c.key == "NIXL_KV_EXPIRED"]
    assert len(freed) == 2 and all(c.text.startswith("ERROR 08-29") for c in freed)


def test_nccl_tests_results_without_their_summary_are_a_log(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("nccl/dgxspark103-gb10-pair-allreduce-perf.log"), "t.log")
    assert d.wedge is False and not d.labelled("cause")


def test_torch_npu_hccl_watchdog_reads_as_nccls(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllmascend382-hccl-watchdog-allreduce-timeout.log"),
                      "npu.log")
    assert (d.side, d.wedge) == ("collective", True)
    keys = {c.key for c in d.labelled("consequence")}
    assert {"NCCL_WATCHDOG_TIMEOUT", "NCCL_PROCESS_TAKEN_DOWN"} <= keys
    assert any("SeqNum 196" in c.text for c in d.labelled("cause"))


def test_vllm_waits_said_again_and_again_are_held(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/vllmascend3977-shm-broadcast-no-block-repeated.log"),
                      "engine.log")
    [wait] = d.labelled("consequence")
    assert wait.key == "VLLM_SHM_WAIT" and wait.wedge is True and "said 5 times" in wait.why
    assert d.wedge is True and d.stage == "not_established"
    d = diagnose_text(tmp_path, _field("log/awsneuron1163-vllm-waiting-for-mqllmengine.log"), "a.log")
    assert d.wedge is True and [c.key for c in d.labelled("consequence")] == ["VLLM_ENGINE_WAIT"]
    # said once, it is no held wait
    once = "INFO 11-04 18:54:33 [shm_broadcast.py:466] No available shared memory broadcast " \
           "block found in 60 seconds.\nINFO 11-04 18:55:00 [loggers.py:1] Avg throughput: 9\n"
    d = diagnose_text(tmp_path, once, "o.log")
    assert d.wedge is not True


def test_vllm_failure_header_is_a_consequence_of_its_traceback(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "traceback/vllmascend3195-enginecore-fatal-error-in-step.log"), "core.log")
    header = next(c for c in d.clues if c.key == "VLLM_FAILURE_HEADER")
    assert header.label == "consequence" and "EngineCore encountered a fatal error" in header.text


def test_gin_access_lines_answering_500_to_generation(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field("log/ollama8387-gin-500-30m-client-timeout.log"), "o.log")
    [fail] = d.labelled("consequence")
    assert fail.key == "SERVER_HTTP_5XX" and "| 500 |         30m0s |" in fail.text
    assert d.stage == "not_established"
    # a request that generates nothing failed off the request path; a probe is no failure
    other = ('[GIN] 2025/01/12 - 01:23:05 | 503 |   1ms |  10.0.0.1 | GET      "/api/version"\n'
             '[GIN] 2025/01/12 - 01:23:06 | 503 |   1ms |  10.0.0.1 | GET      "/health"\n')
    d = diagnose_text(tmp_path, "Jan 12 00:52:46 h ollama[1]: started\n" + other, "p.log")
    [off] = [c for c in d.clues if c.key == "SERVER_HTTP_5XX"]
    assert "/api/version" in off.text and off.stage is None


def test_the_worker_a_stripped_prefix_named_is_the_suspect(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _field(
        "traceback/vllm33074-nixl-dsv32-indexer-startup-assert.log"), "w.log")
    assert d.suspect is not None and d.suspect.startswith("Worker_TP0")
    # an SGLang rank printed inside the prefix names the suspect as before
    d = diagnose_text(tmp_path, _field(
        "traceback/verl705-ray-tqdm-interleaved-scheduler-exception.log"), "v.log")
    assert d.suspect is not None and "TP0" in d.suspect and "pid=" not in d.suspect
