"""Readings added in the fifteenth round (6 December, session 5): a traceback's rank is that of
the line its frames follow ("[... TP0] Traceback", "[DP5 ...] Scheduler hit an exception:"),
also where a paste cut that line's "[date" off; a weaker failure on another rank does not hide
the rank that crashed. Texts are cut from the real artifacts (tests/data/field/traceback/)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.journal import parse_rank
from pdforensics.parsers.settings import in_setting_name
from tests.support.diagnosis import diagnose_text

# sglang 2011: the scheduler's traceback, cut before its exception line, headed by TP0's prefix
_CUT_UNDER_TP0 = (
    "[2024-11-12 11:34:43 TP0] Traceback (most recent call last):\n"
    '  File "/workdir/repos/sglang/python/sglang/srt/managers/scheduler.py", line 1210, in '
    "run_scheduler_process\n    scheduler.event_loop_overlap()\n"
    '  File "/workdir/repos/sglang/python/sglang/srt/managers/scheduler.py", line 615, in '
    "get_next_batch_to_run\n    self.running_batch.merge_batch(self.last_batch)\n")

# sglang 20485: a refused bootstrap on DP3 (a KVTransferError), the scheduler of DP5 crashed
_TWO_RANKS = (
    "[DP3 TP3 EP3 PP1] Prefill bootstrap failed for request rank=3 req.rid='28a38646...' \n"
    "  with exception KVTransferError(bootstrap_room=...): Request ... timed out after 600.0s "
    "in KVPoll.Bootstrapping\n\n"
    "[DP5 TP5 EP5 PP1] Scheduler hit an exception:\n"
    '  File "sglang/srt/managers/scheduler.py", line 2668, in run_scheduler_process\n'
    "    scheduler.event_loop_pp_disagg_prefill()\n"
    '  File "sglang/srt/disaggregation/prefill.py", line 230, in pop_bootstrapped\n'
    "    assert poll == KVPoll.WaitingForInput or poll == KVPoll.Failed\n"
    "AssertionError\n")


def test_a_cut_traceback_carries_the_rank_of_its_header(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _CUT_UNDER_TP0, "crash.txt")
    cut = next(c for c in d.labelled("cause") if c.key == "PYTHON_TRACEBACK_CUT")
    assert cut.rank == "TP0" and d.suspect == "TP0"


def test_without_its_header_the_rank_is_not_guessed(tmp_path: Path) -> None:
    body = _CUT_UNDER_TP0.split("\n", 1)[1]  # the frames alone
    d = diagnose_text(tmp_path, body, "crash.txt")
    assert all(c.rank is None for c in d.labelled("cause")) and d.suspect is None


def test_the_rank_that_crashed_is_the_suspect_beside_a_weaker_failure(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _TWO_RANKS, "prefill.log")
    exc = next(c for c in d.labelled("cause") if c.key == "PYTHON_EXCEPTION")
    assert exc.rank == "DP5_TP5_EP5_PP1" and d.suspect == "DP5 TP5 EP5 PP1"


def test_a_prefix_cut_before_its_time_still_names_the_rank() -> None:
    assert parse_rank("17:15:42 DP3 TP3 EP3] Scheduler hit an exception: Traceback") == "DP3_TP3_EP3"
    assert parse_rank("DP3 TP3] x") == "DP3_TP3"
    assert parse_rank("TP0 is fine, says the note") is None  # no closing bracket: not a prefix
    assert parse_rank("12:00:01 the TP3] log") is None  # words before the rank: not a prefix


# golang/go 31657: the request's getConn helper waits on a dial still resolving the name
_DIAL_DUMP = """goroutine 128 [chan receive]:
net/http.(*Transport).getConn.func2.1(0xc0000771a0, 0x1727c20, 0x0)
	/usr/local/go/src/net/http/transport.go:981 +0x4a
created by net/http.(*Transport).getConn.func2
	/usr/local/go/src/net/http/transport.go:980 +0xfa

goroutine 158 [select]:
net.(*Resolver).lookupIPAddr(0x172f9e0, 0x148d040, 0xc0001231a0)
	/usr/local/go/src/net/lookup.go:275 +0x663
net.(*Dialer).DialContext(0xc00009e120, 0x148d000, 0xc0000b2048)
	/usr/local/go/src/net/dial.go:395 +0x202
net/http.(*Transport).dial(0xc0000be000, 0x148d000, 0xc0000b2048)
	/usr/local/go/src/net/http/transport.go:1005 +0x5a
net/http.(*Transport).dialConn(0xc0000be000, 0x148d000, 0xc0000b2048)
	/usr/local/go/src/net/http/transport.go:1276 +0x1a2
net/http.(*Transport).getConn.func4(0xc0000be000, 0x148d000)
	/usr/local/go/src/net/http/transport.go:999 +0x6e
created by net/http.(*Transport).getConn
	/usr/local/go/src/net/http/transport.go:998 +0x3d8
"""


def test_a_client_waiting_for_a_connection_points_at_the_dial(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _DIAL_DUMP, "goroutines.txt")
    assert (d.side, d.suspect) == ("client", "goroutine 158")
    wait = next(c for c in d.clues if c.key == "CLIENT_HTTP_WAIT")
    assert "a DNS lookup" in wait.why


def test_an_http_client_s_idle_connections_are_the_client_side(tmp_path: Path) -> None:
    dump = ("426 @ 0x4416ea 0x450c79 0x44fa6c 0x4c72e9 0x472411\n"
            "#\t0x4c72e8\tnet/http.(*persistConn).readLoop+0x9c8\t/usr/local/go/src/net/http/transport.go:1536\n\n"
            "426 @ 0x4416ea 0x450c79 0x44fa6c 0x4c866d 0x472411\n"
            "#\t0x4c866c\tnet/http.(*persistConn).writeLoop+0x3bc\t/usr/local/go/src/net/http/transport.go:1641\n")
    d = diagnose_text(tmp_path, dump, "profile.txt")  # golang/go 16953's goroutine profile
    assert (d.stage, d.side, d.wedge) == ("not_applicable", "client", False)
    idle = next(c for c in d.clues if c.key == "GOROUTINES_IDLE")
    assert "852 of them an HTTP client's connections" in idle.text


def test_a_word_in_a_setting_s_name_is_not_an_event() -> None:
    assert in_setting_name("warmup iter (--warmup_iter=n)      : 112", "warmup")
    assert in_setting_name("num_warmup_steps: 0", "warmup")
    assert not in_setting_name("loading safetensors checkpoint shards: 25% completed | 1/4 "
                               "[00:00<00:00, 3.72it/s]", "loading")  # a progress bar
    assert not in_setting_name("info: start of prefill warmup ...", "warmup")
    assert not in_setting_name("[2025-06-01 10:00:00] start of prefill warmup", "warmup")


def test_nccl_kernels_needing_more_shared_memory_than_the_gpu_gives_are_the_cause(
        tmp_path: Path) -> None:
    log = ("localhost:11344:11344 [1] NCCL INFO cudaDriverVersion 12080\n"
           "localhost:11344:11344 [1] NCCL INFO NCCL version 2.25.1+cuda12.2\n"
           "localhost:11344:11344 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn "
           "maxSharedMem 79856\n"  # NVIDIA/nccl 1637: 2.25.1 on an RTX 5090, printed as INFO
           "localhost:11344:11344 [1] NCCL INFO Using network Socket\n")
    d = diagnose_text(tmp_path, log, "nccl.log")
    cause = next(c for c in d.labelled("cause"))
    assert "exceeds device/fn maxSharedMem" in cause.text and d.side == "collective"


# sglang 28702 (Cloud Logging): the exception line was logged before the traceback record it
# ends, and the paste is cut inside the frames
_EXC_FIRST = (
    "ERROR 2026-06-15T14:10:59.392125190Z AssertionError: Committed KV cache already freed "
    "(self.kv_committed_len=1)\n"
    "ERROR 2026-06-15T14:10:59.392128409Z [2026-06-15 14:10:59 TP7] Scheduler hit an exception: "
    "Traceback (most recent call last):\n"
    'ERROR 2026-06-15T14:10:59.392130317Z File "/sgl-workspace/sglang/python/sglang/srt/managers/'
    'scheduler.py", line 2704, in run_scheduler_process\n'
    "ERROR 2026-06-15T14:10:59.392132236Z scheduler.event_loop_overlap()\n"
    'ERROR 2026-06-15T14:10:59.392141727Z File "/sgl-workspace/sglang/python/sglang/srt/managers/'
    'scheduler.py", line 1691, in get_next_batch_to_run\n'
    "ERROR 2026-06-15T14:10:59.392148963Z new_batch = self.get_new_batch_prefill()\n")


def test_an_exception_logged_before_its_cut_traceback_is_its_cause(tmp_path: Path) -> None:
    d = diagnose_text(tmp_path, _EXC_FIRST, "scheduler.log")
    cause = next(c for c in d.labelled("cause"))
    assert cause.key == "PYTHON_EXCEPTION" and cause.line == 1 and cause.rank == "TP7"
    assert cause.text.startswith("AssertionError: Committed KV cache already freed")
    assert any(c.key == "SCHEDULER_EXCEPTION" for c in d.labelled("consequence"))


def test_the_exception_of_the_traceback_before_is_not_taken_twice(tmp_path: Path) -> None:
    first = ("Traceback (most recent call last):\n"
             '  File "/app/a.py", line 3, in run\n    step()\n'
             "ValueError: bad step\n")
    cut = ('  File "/app/b.py", line 9, in serve\n    loop()\n')  # a second traceback, cut
    d = diagnose_text(tmp_path, first + cut, "app.log")
    excs = [c for c in d.clues if c.key == "PYTHON_EXCEPTION"]
    assert [(c.text, c.line) for c in excs] == [("ValueError: bad step", 4)]
    assert any(c.key == "PYTHON_TRACEBACK_CUT" and c.line == 5 for c in d.clues)


def test_several_errors_above_a_cut_traceback_leave_it_unsaid(tmp_path: Path) -> None:
    two = ("RuntimeError: Timed out waiting 7200000ms for recv operation to complete\n"
           "RuntimeError: Timed out waiting 7200000ms for send operation to complete\n")
    d = diagnose_text(tmp_path, two + _EXC_FIRST.split("\n", 1)[1], "scheduler.log")
    assert not any(c.key == "PYTHON_EXCEPTION" for c in d.clues)  # which one it ends: not said
    assert any(c.key == "PYTHON_TRACEBACK_CUT" for c in d.labelled("cause"))
