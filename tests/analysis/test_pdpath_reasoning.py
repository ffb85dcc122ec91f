"""The reasoning pass on real field artifacts (tests/data/field): cause vs consequence, the
side and the suspect, "not established" where the evidence does not decide, controls."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.reason import diagnose
from pdforensics.triage.run import triage_paths

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _d(rel: str):  # type: ignore[no-untyped-def]
    a = triage_paths([str(FIELD / rel)]).analysis
    assert a is not None and a.diagnosis is not None
    return a.diagnosis


def test_a_refused_bootstrap_is_the_cause_and_the_handshake_failure_its_consequence() -> None:
    d = _d("sglang_log/sglang-7381-bootstrap-refused-decode-handshake-failed.log")
    assert (d.stage, d.side, d.suspect) == ("prefill_bootstrap", "prefill", "10.0.0.1:8998")
    causes = [c for c in d.causes]
    assert [c.line for c in causes] == [1] and "Connection refused" in causes[0].text
    # every key read on the report line (the handshake failure and the reason it quotes) follows
    assert {c.line for c in d.consequences} == {2}
    assert d.chain and d.clues[d.chain[0].cause].key == "BOOTSTRAP_INFO_FAILED"
    assert d.root_cause == "not_established" and d.wedge is False


def test_an_abort_is_a_consequence_that_still_places_the_failure_it_ends() -> None:
    d = _d("sglang_log/mooncake-885-prefill-transfer-aborted-by-abortreq.log")
    assert d.causes == () and d.consequences[0].key == "ABORTED_BY_ABORTREQ"
    assert (d.stage, d.side, d.wedge) == ("kv_send", "prefill", False)
    assert "not in the evidence" in d.claims[0].text


def test_every_rank_timing_out_together_names_no_rank_and_killed_is_a_consequence() -> None:
    d = _d("sglang_log/sglang-3752-all-tp-watchdog-same-second-killed.log")
    assert d.suspect is None and d.wedge is True and d.side == "not_established"
    killed = [c for c in d.clues if c.key == "PROCESS_KILLED"]
    assert killed and all(c.label == "consequence" for c in killed)


def test_the_scheduler_envelope_is_the_consequence_of_the_exception_it_wraps() -> None:
    d = _d("sglang_log/sglang-6413-bootstrap-info-none-decode-scheduler-crash.log")
    assert d.causes[0].text.startswith("TypeError: cannot unpack")
    assert d.causes[0].rank == "TP3" and d.suspect == "TP3"  # the envelope's rank
    assert any(c.key == "SCHEDULER_EXCEPTION" for c in d.consequences)
    assert (d.stage, d.side) == ("prefill_bootstrap", "decode")


def test_a_cut_traceback_names_its_innermost_frame_and_the_rank_its_envelope_gives() -> None:
    """The traceback is cut before its exception line: its innermost frame is the cause, the
    scheduler's "hit an exception" envelope and the launcher's SIGQUIT its consequences (the
    reading four blind sidecars give; this file's own sidecar keeps the envelope a cause, a
    known gap with the reason)."""
    d = _d("sglang_log/sglang-32893-sigquit-before-tp1-traceback.log")
    assert d.suspect == "TP1" and d.causes[0].key == "PYTHON_TRACEBACK_CUT"
    assert d.causes[0].rank == "TP1" and "in run_batch" in d.causes[0].text
    assert {"LAUNCHER_SIGQUIT", "SCHEDULER_EXCEPTION"} <= {c.key for c in d.consequences}


@pytest.mark.parametrize("rel, stage, side", [
    ("sglang_log/gen-sglang0523-decode-startup-and-batches-control.log", "not_applicable", "decode"),
    ("sglang_log/sglang-3909-decode-batches-throughput-slow-decline-control.log", "not_applicable",
     "decode"),
    ("sglang_log/nixl-503-sglang-prefill-warmup-control.log", "startup", "not_established"),
    ("sglang_log/sglang-4759-spec-prefill-decode-batches-queue-control.log", "not_applicable",
     "not_established"),
    ("pyspy/gen-sglang0523-decode-scheduler-busy-pyspy-control.txt", "decode_forward", "decode"),
    ("pyspy/gen-sglang0523-prefill-scheduler-idle-pyspy-control.txt", "not_applicable", "prefill"),
    ("metrics/gen-sglang0523-prefill-metrics-idle-control.prom", "not_applicable", "prefill"),
])
def test_controls_are_read_where_the_work_is_and_never_as_a_wedge(rel: str, stage: str,
                                                                  side: str) -> None:
    d = _d(rel)
    assert (d.stage, d.side, d.wedge) == (stage, side, False)
    assert d.causes == () and d.root_cause == "not_established"


def test_go_clients_waiting_for_a_pooled_connection_are_victims_on_the_client_side() -> None:
    d = _d("go/golang-38584-getconn-select-1469-minutes.txt")
    assert (d.stage, d.side, d.suspect, d.wedge) == ("not_applicable", "client", "goroutine 27",
                                                     True)
    assert "pooled connection" in d.consequences[0].text and "1469 minutes" in d.consequences[0].text


def test_a_faulthandler_crash_names_the_current_thread() -> None:
    d = _d("faulthandler/gen-py311-segv-current-thread-plus-idle.txt")
    assert d.causes[0].text.startswith("Fatal Python error: Segmentation fault (crashed at: ")
    assert d.causes[0].text.endswith("line 519 in string_at)")
    assert d.suspect == "Current thread 0x00007f17e17c3b80" and d.wedge is False


def test_equal_causes_on_two_sides_leave_the_side_open_and_say_what_decides() -> None:
    a = Clue("X", "cause", "x failed", "a.log", 1, 10.0, side="prefill", strength=2)
    b = Clue("Y", "cause", "y failed", "b.log", 1, 11.0, side="decode", strength=2)
    d = diagnose([a, b])
    assert d.side == "not_established" and d.decide and "upstream" in d.decide[0]
    assert d.causes[0].key == "X"  # the earlier one still heads the evidence


def test_a_weak_report_after_a_stronger_cause_with_the_same_room_is_its_consequence() -> None:
    up = Clue("LOST_PREFILL_CONNECTION", "cause", "lost", "decode.log", 3, 10.0,
              side="prefill", strength=3, rooms=(7,))
    rep = Clue("DECODE_TRANSFER_FAILED", "cause", "failed room 7", "other.log", 9, 12.0,
               strength=1, rooms=(7,))
    d = diagnose([rep, up])
    assert [c.key for c in d.causes] == ["LOST_PREFILL_CONNECTION"]
    assert d.consequences[0].key == "DECODE_TRANSFER_FAILED" and "follows" in d.consequences[0].why
    assert d.chain[0].why == "same bootstrap room"


def test_no_evidence_is_no_reading() -> None:
    d = diagnose([])
    assert (d.stage, d.side, d.wedge, d.suspect) == ("not_applicable", "not_established", None, None)


def test_a_rank_caught_in_a_collective_is_a_reading_only_where_its_role_stands_still() -> None:
    """A stack sample of a TP forward waiting in all_reduce: alone it reads as a wait on the
    collective side (the real engine's TP 2 rank whose peer was stopped); beside a counter of
    that role rising (the real engine's healthy TP 2 pair) it is a moment of a working forward."""
    wait = Clue("STACK_FORWARD_IN_COLLECTIVE", "consequence", "TP0 waits in all_reduce inside a forward",
                "stacks", stage="prefill_forward", side="collective", role="prefill", strength=1)
    alone = diagnose([wait])
    assert (alone.stage, alone.side) == ("prefill_forward", "collective")
    moving = Clue("COUNTER_ROSE", "progress", "sglang:generation_tokens_total rose 6 -> 10 in 4 s",
                  "metrics", role="prefill", strength=2)
    healthy = diagnose([wait, moving])
    assert healthy.side != "collective" and not healthy.wedge, healthy


def test_the_server_args_line_is_no_sigquit() -> None:
    """SGLang 0.5.23 logs its server_args, 'custom_sigquit_handler': None among them: no
    launcher SIGQUIT; the launcher's own 'SIGQUIT received' line is one."""
    from pdforensics.analysis.pdpath.read_sglang import context_clues
    from pdforensics.analysis.pdpath.sources import Source

    text = ("[2026-12-05 11:25:16] server_args={'use_ray': False, 'custom_sigquit_handler': None}\n"
            "[2026-12-05 11:43:33] SIGQUIT received. signum=None, frame=None. It usually means one "
            "child failed.\n")
    keys = [(c.key, c.line) for c in context_clues(Source("p.log", "log", role="prefill", text=text))]
    assert ("LAUNCHER_SIGQUIT", 2) in keys and ("LAUNCHER_SIGQUIT", 1) not in keys, keys


def test_one_burst_of_errors_is_one_failure_its_first_line_the_cause() -> None:
    """The fresh blind set's Mooncake start-up (no GID on the RDMA device, so no NIC, so no
    transport): the warning that says why is the cause, the error lines after it within the
    same second its consequences, and the burst is at start-up on the device it names."""
    d = _d("transfer_engine/mooncake1593-no-ipv6-gid-rdma-init.log")
    assert [c.line for c in d.causes] == [1] and "No suitable GID" in d.causes[0].text
    assert {"Failed to open device", "No available RNIC", "after 20 retries"} <= {
        w for c in d.consequences for w in ("Failed to open device", "No available RNIC",
                                            "after 20 retries") if w in c.text}
    assert (d.stage, d.side, d.suspect, d.wedge) == ("startup", "transfer_engine", "mlx5_bond_1",
                                                     False)


def test_a_burst_keeps_repeats_restatements_and_stronger_lines_as_causes() -> None:
    first = Clue("E1", "cause", "[1.0] [h:11:0] x.c:1 UCX ERROR create failed on mlx5_1", "a.log",
                 1, 100.0, side="transfer_engine", strength=2)
    repeat = Clue("E1", "cause", "[1.2] [h:12:0] x.c:1 UCX ERROR create failed on mlx5_1", "a.log",
                  2, 100.2, side="transfer_engine", strength=2)
    restated = Clue("E2", "cause", "GPU 0000:a1:00.0: create failed on mlx5_1", "a.log", 3, 100.3,
                    side="transfer_engine", strength=2)
    stronger = Clue("E3", "cause", "decisive", "a.log", 4, 100.4, side="transfer_engine",
                    strength=3)
    follows = Clue("E4", "cause", "backend not created", "a.log", 5, 100.5, stage="startup",
                   side="transfer_engine", strength=2)
    later = Clue("E5", "cause", "much later", "a.log", 6, 105.0, side="transfer_engine", strength=2)
    other = Clue("E6", "cause", "another file", "b.log", 1, 100.1, side="transfer_engine",
                 strength=2)
    d = diagnose([first, repeat, restated, stronger, follows, later, other])
    assert {c.key for c in d.causes} == {"E1", "E2", "E3", "E5", "E6"}
    assert [c.key for c in d.consequences] == ["E4"] and "after E1" in d.consequences[0].why
    assert next(c for c in d.clues if c.text == first.text).stage == "startup"


def test_a_go_panic_is_the_cause_and_a_crash_not_a_wedge() -> None:
    d = _d("go/llmdrouter1140-epp-send-closed-channel.log")
    assert d.causes[0].text == "panic: send on closed channel"
    assert (d.stage, d.side, d.suspect, d.wedge) == ("stream_back", "router", "goroutine 1027519",
                                                     False)


def test_quiet_evidence_of_other_programs_holds_nothing_but_a_quiet_sglang_log_stays_open() -> None:
    idle = _d("go/stewardci256-sigquit-goroutine-dump-control.txt")
    assert idle.wedge is False and idle.causes == ()
    # a dump with only the runtime's goroutine 0 shows nothing of the program: cannot tell
    assert _d("go/moby44791-dockerd-sigquit-idle-control.txt").wedge is None
    # an SGLang server with no failure and no progress may be the silent wedge itself
    quiet = diagnose([Clue("SGLANG_SERVER", "noise", "sglang::scheduler", "s.log")],
                     sources_read=1)
    assert quiet.wedge is None


def test_a_faulthandler_crash_is_placed_by_its_innermost_frames() -> None:
    d = _d("faulthandler/sglang3451-segfault-ncclcomminitrank.txt")
    assert "line 351 in ncclCommInitRank" in d.causes[0].text
    assert (d.stage, d.side, d.wedge) == ("startup", "collective", False)


def test_a_c10d_store_timeout_is_the_cause_of_the_scheduler_crash_after_it() -> None:
    d = _d("traceback/sglang3398-multinode-c10d-store-timeout.txt")
    assert d.claims[0].text.startswith("upstream cause: C10D_STORE_FAILURE")
    assert d.side == "collective" and "11.130.1.53]:5000" in (d.suspect or "")
    assert [c.key for c in d.consequences] == ["SCHEDULER_EXCEPTION"]
    # the cut traceback's innermost frame is a weaker cause beside it (where the scheduler was)
    assert {c.key for c in d.causes} == {"C10D_STORE_FAILURE", "PYTHON_TRACEBACK_CUT"}


def test_a_failure_report_whose_record_quotes_its_error_is_that_errors_consequence() -> None:
    d = _d("sglang_log/sglang29725-prefill-bootstrap-dp-rank-conflict.log")
    assert [c.key for c in d.causes] == ["KV_TRANSFER_ERROR"] * 2
    assert all("follow_bootstrap_room conflict: dispatched to dp_rank 0 but" in c.text
               for c in d.causes)
    assert {c.key for c in d.consequences} == {"PREFILL_BOOTSTRAP_FAILED"}
    assert (d.stage, d.side, d.suspect) == ("prefill_bootstrap", "prefill", "DP1")


def test_a_worker_the_router_cannot_reach_is_the_cause_of_its_failed_health_checks() -> None:
    d = _d("router_log/sglang11310-router-grpc-health-transport-error.log")
    assert {c.suspect for c in d.causes} == {"grpc://localhost:20000", "grpc://localhost:20001"}
    assert {c.key for c in d.consequences} == {"HEALTH_CHECK_FAILED"}
    assert d.suspect == "grpc://localhost:20000" and d.wedge is False
    assert d.side == "not_established"  # the URL does not say which role the worker has


def test_the_watchdogs_state_dump_is_a_forward_that_did_not_return() -> None:
    d = _d("sglang_log/sglang33549-dsv4-decode-hang-watchdog-dump.log")
    assert (d.stage, d.side, d.wedge, d.suspect) == ("decode_forward", "decode", True, None)
    assert d.causes == ()  # the dump is what the watchdog did, not why the forward hung


def test_nccl_tests_failure_line_reports_the_warnings_before_it() -> None:
    d = _d("nccl/nccltests24-ib-completion-error12.log")
    assert any(c.key == "NCCL_TEST_FAILURE" and "common.cu:343" in c.text for c in d.consequences)
    assert any("Got completion with error 12" in c.text for c in d.causes)


def test_gsp_timeouts_are_one_stall_named_by_the_xid_that_follows() -> None:
    d = _d("kernel/opengpukm446-gsp-rpc-timeout-xid154.log")
    gsp = [c for c in d.causes if c.key == "GSP_RPC"]
    assert len(gsp) == 1 and "Back to back GSP RPC timeout" in gsp[0].text
    assert "rpcRecvPoll timedout" in gsp[0].text and gsp[0].suspect == "PCI:0000:0b:00"
    assert [c.key for c in d.consequences] == ["GPU_XID_154"]


def test_a_cut_scheduler_traceback_is_placed_by_the_call_its_last_line_makes() -> None:
    d = _d("traceback/sglang3398-multinode-c10d-store-timeout.txt")
    assert d.stage == "startup"  # Scheduler.__init__ -> ModelRunner -> init_torch_distributed()


def test_a_log_printed_through_ray_is_read_without_the_actor_prefix() -> None:
    d = _d("client/slime1328-router-503-all-circuits-open.log")
    assert d.causes == ()  # why the workers were unhealthy is not in a client's log
    assert {c.key for c in d.consequences} == {"ROUTER_REFUSED_NO_WORKER", "CLIENT_HTTP_5XX"}
    assert (d.stage, d.side, d.wedge) == ("router_dispatch", "router", False)
    assert not d.clues[0].text.startswith("(RolloutManager")


def test_a_router_that_had_no_workers_and_then_served_is_a_passing_start() -> None:
    d = _d("router_log/gen-smg113-router-startup-pd-control.log")
    assert "ROUTER_REFUSED_NO_WORKER" not in {c.key for c in d.clues}
    assert any(c.key == "ROUTER_REFUSED_NO_WORKER_PASSED" and c.label == "noise" for c in d.clues)


def test_the_c10d_store_gone_is_a_consequence_naming_the_store() -> None:
    d = _d("nccl/sglang20859-hicache-tp16-tcpstore-reset.log")
    assert d.causes == () and {c.key for c in d.consequences} == {"C10D_STORE_GONE"}
    assert (d.stage, d.side) == ("not_established", "collective")
    assert "sglang-0.default.pod.transwarp.local" in (d.suspect or "")
    start = _d("nccl/sglang2561-slurm-tcpstore-connect-timeout.log")
    assert (start.stage, start.suspect, start.wedge) == ("startup", "sws-8h100grid-05:8000", False)


def test_a_cut_scheduler_traceback_names_its_innermost_frame_beside_the_envelope() -> None:
    d = _d("traceback/sglang26265-scheduler-prefill-kv-oom-traceback.txt")
    cut = [c for c in d.causes if c.key == "PYTHON_TRACEBACK_CUT"]
    assert len(cut) == 1 and "line 412, in alloc_paged_token_slots_extend" in cut[0].text
    assert (d.stage, d.side, d.suspect) == ("prefill_forward", "prefill", "TP0")


def test_goroutines_blocked_for_minutes_are_a_wedge_and_idle_ones_are_not() -> None:
    d = _d("go/ovhcds3399-hatchery-swarm-goroutines-locked.txt")
    assert {c.key for c in d.consequences} == {"GOROUTINE_BLOCKED"} and d.wedge is True
    assert any("goroutine 175 [chan receive, 51 minutes]:" in c.text for c in d.consequences)
    assert _d("go/stewardci256-sigquit-goroutine-dump-control.txt").wedge is False


def test_one_running_thread_of_another_program_is_where_to_look() -> None:
    d = _d("pyspy/vllm17676-a2-warmup-flashinfer-sampler-pyspy.txt")
    assert d.suspect == "Thread 2403" and d.stage == "startup"
    assert "top_k_top_p_sampling_from_logits (flashinfer/sampling.py:1548)" in d.causes[0].text
    assert d.wedge is None  # one sample: running or stuck is not decided
    bare = _d("pyspy/ray45822-idle-actor-fetch-function-stack.txt")  # no Thread header at all
    assert "fetch_registered_method (ray/_private/function_manager.py:248)" in bare.causes[0].text


def test_the_oom_reaper_follows_the_kill_and_a_benchmark_summary_is_work_done() -> None:
    d = _d("kernel/ert7797-oom-killer-perl-repro.log")
    assert [c.key for c in d.consequences] == ["OOM_INVOKED", "OOM_REAPED"]
    assert d.suspect == "1440763 (perl)"
    bench = _d("load/sglang31659-bench-serving-ok-control.txt")
    assert bench.wedge is False and any(c.key == "BENCH_REQUESTS_DONE" for c in bench.clues)


def test_a_failure_signal_handler_opens_the_crash_and_faulthandler_places_it() -> None:
    d = _d("faulthandler/vllm3053-ray-sigsegv-faulthandler-cudagraph-capture.log")
    assert d.causes[0].key == "NATIVE_SIGNAL" and "SIGSEGV received" in d.causes[0].text
    assert d.stage == "startup" and d.wedge is False  # capture_model: CUDA graphs at start
    assert any(c.key == "PYTHON_FATAL" for c in d.consequences)


def test_a_traceback_the_file_ends_inside_is_a_crash_placed_by_its_frames() -> None:
    d = _d("traceback/sglang5151-ray-dedup-pt-empty-cache.log")
    assert d.causes[0].key == "PYTHON_TRACEBACK_CUT" and "load_weights" in d.causes[0].text
    assert (d.stage, d.wedge) == ("startup", False)
    # gdb's py-bt ("most recent call first") is a sample, not a traceback that was cut
    assert "PYTHON_TRACEBACK_CUT" not in {
        c.key for c in _d("gdb/gen-gdb13-thread-apply-all-py-bt.txt").clues}


def test_a_rank_suspect_is_named_as_the_log_prints_it() -> None:
    d = _d("traceback/sglang10570-dsv31-eagle-extend-exception.txt")
    assert d.suspect == "DP4 TP4 EP4"


def test_a_thread_that_died_of_an_exception_is_named_by_its_target() -> None:
    d = _d("traceback/sglang6720-nixl-prefill-bootstrap-indexerror.log")
    assert d.suspect == "bootstrap_thread" and d.causes[0].text == "IndexError: list index out of range"
    assert any(c.key == "THREAD_EXCEPTION" for c in d.consequences)
    assert (d.stage, d.side) == ("prefill_bootstrap", "prefill")


def test_a_nixl_backend_that_cannot_be_created_fails_at_startup() -> None:
    for rel in ("traceback/nixl96-createbackend-ucx-err-backend.log",
                "traceback/nixl177-register-vram-err-backend.log"):
        d = _d(rel)
        assert (d.stage, d.wedge) == ("startup", False), rel


def test_a_servers_stopped_scheduler_explains_its_own_frozen_queue() -> None:
    """The real engine's rank-stopped fault caught while a request sat in decode's transfer
    queue (a live capture of 6 December): the frozen queue's rule points at prefill, but decode's
    own scheduler is stopped, so the queue is its consequence and decode is the side."""
    stopped = Clue("PROCESS_STATE", "cause", "decode-0 decode:21345: scheduler pid 24197 is stopped",
                   "raw/decode-0/ps", side="decode", role="decode", strength=2)
    queue = Clue("DECODE_TRANSFER_STUCK", "cause", "decode-0 decode:21345: the decode transfer "
                 "queue has 1 requests, frozen for 4.0 s", "raw/decode-0/metrics",
                 stage="decode_transfer_wait", side="prefill", role="decode", strength=3)
    other = Clue("DECODE_TRANSFER_STUCK", "cause", "decode-1 decode:21346: the decode transfer "
                 "queue has 2 requests, frozen", "raw/decode-1/metrics",
                 stage="decode_transfer_wait", side="prefill", role="decode", strength=3)
    d = diagnose([queue, stopped])
    assert (d.stage, d.side) == ("decode_forward", "decode")
    assert [c.key for c in d.consequences] == ["DECODE_TRANSFER_STUCK"]
    # another server's frozen queue is not explained by this one's stopped process
    assert "DECODE_TRANSFER_STUCK" in {c.key for c in diagnose([other, stopped]).causes}
