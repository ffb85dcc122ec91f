"""Issue 30's format gaps, each on a real artifact of the field corpus (tests/data/field):
a traceback whose header is cut, faulthandler without a thread header or with a crash, two
dumps interleaved in one terminal, Go's pooled-connection waits, debug=1 durations, wait
ranges, the runtime's own goroutines, tracebackancestors, a dump cut after `created by`,
native frames bucketed by library, the busy rank everyone waits on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.analysis.stacks import analyze_stacks, format_stacks_text
from pdforensics.analysis.stacks_classify import PEER_WAIT, POOL_WAIT, blocked_frame
from pdforensics.analysis.stacks_load import load_stack_file, parse_stack_text
from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.cli import main
from pdforensics.errors import ParseError
from pdforensics.parsers.frames import Frame
from pdforensics.parsers.goroutines import parse_goroutines

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _text(rel: str) -> str:
    return (FIELD / rel).read_text(encoding="utf-8")


def _stacks(rel: str) -> str:
    res = CliRunner().invoke(main, ["stacks", str(FIELD / rel)])
    assert res.exit_code == 0, res.output
    return res.output


def test_a_traceback_without_header_or_indents_is_one_stack() -> None:
    dumps = parse_stack_text(_text("traceback/sglang-8974-header-cut-unindented-nccl-init.log"))
    threads = [t for d in dumps for t in d.threads]
    assert len(threads) == 1 and len(threads[0].frames) == 8
    assert threads[0].frames[0].function == "NCCL_CHECK"
    assert threads[0].frames[-1].function == "__init__"


def test_a_faulthandler_paste_that_starts_mid_thread_keeps_that_thread() -> None:
    dumps = parse_stack_text(_text("faulthandler/mooncake-842-faulthandler-first-thread-no-header.txt"))
    threads = [t for d in dumps for t in d.threads]
    assert len(threads) == 3 and threads[0].name == "(thread header not in the text)"
    assert threads[0].frames[0].function == "_bootstrap"


def test_a_faulthandler_crash_is_said_first_with_its_thread_and_frame() -> None:
    out = _stacks("faulthandler/gen-py311-segv-current-thread-plus-idle.txt")
    first = out.splitlines()[1]
    assert first.startswith("CRASHED: ") and "Fatal Python error: Segmentation fault" in first
    assert "current thread 0x00007f17e17c3b80 at string_at" in first


def test_two_dumps_interleaved_in_one_terminal_are_named_so() -> None:
    rel = "faulthandler/gen-py311-two-processes-interleaved.txt"
    with pytest.raises(ParseError, match="interleaved within lines"):
        parse_stack_text(_text(rel))
    res = CliRunner().invoke(main, ["stacks", str(FIELD / rel)])
    assert res.exit_code == 1 and "interleaved" in res.output and "no thread found" not in res.output


def test_a_goroutine_in_getconn_waits_for_a_pooled_connection_not_for_a_reply() -> None:
    out = _stacks("go/gen-go119-debug2-getconn-pooled-conn.txt")
    assert f"] {POOL_WAIT}" in out and "the request is not sent yet" in out
    roundtrip = _stacks("go/justitia-63-debug2-1129-minutes.txt")
    assert POOL_WAIT not in roundtrip and "io_wait" in roundtrip


def test_debug1_says_the_duration_is_unknown_and_debug2_gives_the_range() -> None:
    assert "wait duration unknown" in _stacks("go/gen-go119-debug1-getconn-pooled-conn.txt")
    assert "waiting < 1 min" in _stacks("go/gen-go119-debug2-getconn-pooled-conn.txt")
    assert "waiting 1129 min" in _stacks("go/justitia-63-debug2-1129-minutes.txt")


def test_goroutine_0_and_the_runtime_goroutines_are_noise() -> None:
    rel = "go/gen-go119-sigquit-gotraceback-system-goroutine0.txt"
    report = analyze_stacks(load_stack_file(str(FIELD / rel)))
    assert dict(report.noise_by_reason)["go runtime"] == 5
    assert all(m.thread_id != "0" for b in report.buckets for m in b.members)
    assert report.buckets[0].leaf_class == POOL_WAIT


def test_tracebackancestors_blocks_are_kept_as_ancestry_not_goroutines() -> None:
    gs = parse_goroutines(_text("go/gen-go119-tracebackancestors-debug2.txt"))
    assert len(gs) == 9 and {g.originating_from for g in gs if g.thread_id in ("8", "9", "10")} == {"7"}
    (one,) = parse_goroutines(_text("go/typescript-go-3065-tracebackancestors-snip.txt"))
    assert (one.thread_id, one.created_in, one.originating_from) == ("3965858", "3964288", "3964288")


def test_a_goroutine_dump_cut_right_after_created_by_is_read() -> None:
    gs = parse_goroutines(_text("go/gen-go119-debug2-cut-after-created-by.txt"))
    assert [g.thread_id for g in gs] == ["1", "6", "8"]
    assert gs[-1].created_by is not None and gs[-1].created_by.function == "main.dispatch"


def test_a_go_paste_without_any_goroutine_header_is_read() -> None:
    (g,) = parse_goroutines(_text("go/golang-62363-getconn-fp-sp-pc-frames.txt"))
    f = blocked_frame(g)
    assert f is not None and f.function == "net/http.(*Transport).getConn"


def test_native_frames_of_one_stack_in_two_processes_land_in_one_bucket() -> None:
    (d,) = [x for x in load_stack_file(str(FIELD / "sglang_log/sglang-17941-pp-watchdog-native.log"))
            if x.dump.rank == "PP2_TP1"]
    main_thread = d.dump.threads[0]
    # the same stack in another process: libc at another address (ASLR), as in the same paste
    moved = replace(main_thread, frames=tuple(
        replace(f, function=f.function.replace("0x7fa2d1", "0x7f259f")) if f.function.startswith("0x")
        else f for f in main_thread.frames))
    other = LabelledDump(replace(d.dump, pid=88694, threads=(moved,)), rank="PP2_TP2", source="x")
    report = analyze_stacks([d, other])
    waits = [b for b in report.buckets if any("waitRecv" in f.function for f in b.frames)]
    assert len(waits) == 1 and waits[0].count == 2
    assert waits[0].leaf_class == PEER_WAIT and not waits[0].suspect


def test_the_busy_forward_is_the_suspect_the_ranks_waiting_on_it_are_not() -> None:
    busy = load_stack_file(str(FIELD / "pyspy/gen-sglang0523-decode-scheduler-busy-pyspy-control.txt"))
    waiting = [x for x in load_stack_file(str(FIELD / "sglang_log/sglang-17941-pp-watchdog-native.log"))
               if x.dump.rank == "PP2_TP1"]
    report = analyze_stacks([*busy, *waiting])
    suspects = [b for b in report.buckets if b.suspect]
    assert [b.leaf_class for b in suspects] == ["busy"]
    assert any(f.function == "Scheduler.run_batch" for f in suspects[0].frames)
    text = format_stacks_text(report)
    assert "peer_wait" in text and "read the peer" in text


def test_blocked_frame_skips_the_go_runtime_parking_frames() -> None:
    g = parse_goroutines(_text("go/gen-go119-sigquit-gotraceback-system-goroutine0.txt"))
    waiting = [t for t in g if any("getConn" in f.function for f in t.frames)]
    assert waiting and all(blocked_frame(t) == next(f for f in t.frames if "getConn" in f.function)
                           for t in waiting)
    assert blocked_frame(waiting[0]) != Frame("runtime.gopark")
