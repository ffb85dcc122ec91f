"""py-spy parsers on real py-spy 0.4.3 output (tests/data/pyspy_*, see pyspy_COMMANDS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.frames import ThreadStack
from pdforensics.parsers.pyspy import (
    classify_pyspy_error,
    extract_watchdog_dumps,
    parse_pyspy_json,
    parse_pyspy_text,
)

DATA = Path(__file__).resolve().parent.parent / "data"
THREADS = ["MainThread", "sleeper", "busy", "queue-waiter", None]


def _read(name: str) -> str:
    return (DATA / name).read_text()


def _by_name(threads: tuple[ThreadStack, ...]) -> dict[str | None, ThreadStack]:
    return {t.name: t for t in threads}


def test_basic_dump() -> None:
    (d,) = parse_pyspy_text(_read("pyspy_basic.txt"))
    assert d.kind == "pyspy" and d.pid == 5155 and d.error is None
    assert d.command == "/work/main/.venv/bin/python pyspy_target_prog.py"
    assert d.python_version == "3.11.7" and d.parent_pid is None
    assert [t.name for t in d.threads] == THREADS
    t = _by_name(d.threads)
    main = t["MainThread"]
    assert main.thread_id == "5155" and main.state == "idle"
    assert [str(f) for f in main.frames] == [
        "Scheduler.recv_requests (pyspy_target_prog.py:50)",
        "Scheduler.event_loop_normal (pyspy_target_prog.py:60)",
        "main (pyspy_target_prog.py:98)",
        "<module> (pyspy_target_prog.py:102)",
    ]
    assert t["busy"].state == "active+gil"
    assert t["queue-waiter"].leaf is not None and t["queue-waiter"].leaf.function == "Condition.wait"
    assert t["queue-waiter"].frames[1].file == "queue.py" and t["queue-waiter"].frames[1].line == 171
    unnamed = t[None]
    assert unnamed.thread_id == "5160" and [f.function for f in unnamed.frames] == ["unnamed_worker"]
    assert not any(f.native for th in d.threads for f in th.frames)


def test_native_dump_marks_native_frames() -> None:
    (d,) = parse_pyspy_text(_read("pyspy_native.txt"))
    assert [t.name for t in d.threads] == THREADS
    main = _by_name(d.threads)["MainThread"]
    leaf = main.frames[0]
    assert (leaf.function, leaf.file, leaf.line, leaf.native) == ("recv", "libc.so.6", None, True)
    assert main.frames[1].file == "socketmodule.c" and main.frames[1].line == 921 and main.frames[1].native
    python = [f for f in main.frames if not f.native]
    assert [f.function for f in python] == [
        "Scheduler.recv_requests", "Scheduler.event_loop_normal", "main", "<module>"]
    assert main.frames[-1].function.startswith("0x") and main.frames[-1].native
    sleeper = _by_name(d.threads)["sleeper"]
    assert [f.function for f in sleeper.frames[:3]] == ["clock_nanosleep", "time_sleep", "sleeper"]


def test_locals_attach_to_their_frame() -> None:
    (d,) = parse_pyspy_text(_read("pyspy_locals.txt"))
    t = _by_name(d.threads)
    assert [f.function for f in t["MainThread"].frames] == [
        "Scheduler.recv_requests", "Scheduler.event_loop_normal", "main", "<module>"]
    recv = t["MainThread"].frames[0]
    assert [name for name, _ in recv.locals] == ["self"]
    assert recv.locals[0][1].startswith("<Scheduler at 0x")
    main = dict(t["MainThread"].frames[2].locals)
    assert main["children"] == "0" and main["procs"] == "[]"
    assert dict(t["busy"].frames[0].locals)["x"].isdigit()
    wait = dict(t["queue-waiter"].frames[0].locals)
    assert wait["timeout"] == "None" and wait["gotit"] == "False"
    assert [n for n, _ in t["queue-waiter"].frames[1].locals] == ["self", "block", "timeout"]


def test_locals_do_not_change_the_stack() -> None:
    (plain,) = parse_pyspy_text(_read("pyspy_basic.txt"))
    (loc,) = parse_pyspy_text(_read("pyspy_locals.txt"))
    for a, b in zip(plain.threads, loc.threads, strict=True):
        assert [(f.function, f.file, f.line) for f in a.frames] == [
            (f.function, f.file, f.line) for f in b.frames]


def test_subprocesses() -> None:
    dumps = parse_pyspy_text(_read("pyspy_subprocesses.txt"))
    assert [d.pid for d in dumps] == [5167, 5169, 5170, 5171, 5172]
    assert [d.command for d in dumps[1:]] == [f"sglang::scheduler_TP{i}" for i in range(4)]
    assert dumps[0].parent_pid is None
    assert all(d.parent_pid == 5167 for d in dumps[1:])
    assert dumps[1].parent_command.endswith("pyspy_target_prog.py --children 4")
    assert all([t.name for t in d.threads] == THREADS for d in dumps)
    leaves = {d.command: _by_name(d.threads)["MainThread"].frames[0].function for d in dumps[1:]}
    assert leaves == {"sglang::scheduler_TP0": "Scheduler.recv_requests",
                      "sglang::scheduler_TP1": "Scheduler.recv_requests",
                      "sglang::scheduler_TP2": "Scheduler.recv_requests",
                      "sglang::scheduler_TP3": "Scheduler.all_reduce"}
    child_main = _by_name(dumps[1].threads)["MainThread"]
    assert "child_main" in [f.function for f in child_main.frames]
    assert child_main.frames[-1].function == "<module>"


def test_later_dump_has_the_same_processes_in_another_order() -> None:
    first = {d.pid: d for d in parse_pyspy_text(_read("pyspy_subprocesses.txt"))}
    later = {d.pid: d for d in parse_pyspy_text(_read("pyspy_subprocesses_later.txt"))}
    assert set(first) == set(later)
    for pid, d in first.items():
        a = _by_name(d.threads)["MainThread"]
        b = _by_name(later[pid].threads)["MainThread"]
        assert a.frames == b.frames


def test_json_dump() -> None:
    (d,) = parse_pyspy_json(_read("pyspy_dump.json"))
    assert d.kind == "pyspy-json" and d.pid == 5155
    t = _by_name(d.threads)
    assert set(t) == set(THREADS)
    assert t["MainThread"].thread_id == "5155" and t["MainThread"].state == "idle"
    assert t["busy"].state == "active+gil"
    leaf = t["MainThread"].frames[0]
    assert leaf.function == "Scheduler.recv_requests" and leaf.line == 50
    assert leaf.file == "/work/main/tests/data/pyspy_target_prog.py"
    text = _by_name(parse_pyspy_text(_read("pyspy_basic.txt"))[0].threads)
    for name in THREADS:
        assert [f.function for f in t[name].frames] == [f.function for f in text[name].frames]


def test_json_with_subprocesses_holds_only_the_parent() -> None:
    # py-spy 0.4.3 ignores --subprocesses with --json: one pid, as the sample shows
    dumps = parse_pyspy_json(_read("pyspy_subprocesses.json"))
    assert [d.pid for d in dumps] == [5167] and len(dumps[0].threads) == 5


@pytest.mark.parametrize("name, reason, message", [
    ("pyspy_err_nopid.txt", "no_such_process", "Error: Failed to get process executable name."),
    ("pyspy_err_notpython.txt", "not_python", "Error: Failed to find python version from target process"),
    ("pyspy_err_permission.txt", "permission", "Permission Denied: Try running again"),
])
def test_failures(name: str, reason: str, message: str) -> None:
    text = _read(name)
    (d,) = parse_pyspy_text(text)
    assert d.threads == () and d.error is not None and d.error.startswith(message)
    failure = classify_pyspy_error(text, 1)
    assert failure is not None and failure.reason == reason and failure.message.startswith(message)
    assert failure.fix


def test_classify_by_exit_status() -> None:
    assert classify_pyspy_error("", 0) is None
    missing = classify_pyspy_error("bash: line 1: py-spy: command not found", 127)
    assert missing is not None and missing.reason == "not_installed"
    hung = classify_pyspy_error("", 124)
    assert hung is not None and hung.reason == "timeout"
    odd = classify_pyspy_error("something new\nError: boom", 3)
    assert odd is not None and odd.reason == "unknown" and odd.message == "Error: boom"


def test_empty_location_and_bare_names() -> None:
    text = 'Thread 0x7F00AB (gil): "w"\n    <lambda> ()\n    run (worker.py:7)\n    0xdeadbeef (libc.so.6)\n'
    (d,) = parse_pyspy_text(text)
    (t,) = d.threads
    assert t.thread_id == "0x7F00AB" and t.state == "gil" and t.name == "w" and d.pid is None
    assert [(f.function, f.file, f.line) for f in t.frames] == [
        ("<lambda>", "", None), ("run", "worker.py", 7), ("0xdeadbeef", "libc.so.6", None)]
    assert str(t.frames[0]) == "<lambda>"


def test_garbage_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="frame outside a thread"):
        parse_pyspy_text("    foo (bar.py:1)\n")
    with pytest.raises(ParseError, match="unexpected line"):
        parse_pyspy_text(_read("pyspy_basic.txt") + "hello world\n")
    with pytest.raises(ParseError):
        parse_pyspy_json("{not json")
    with pytest.raises(ParseError):
        parse_pyspy_json('{"pid": 1}')
    assert parse_pyspy_text("") == () and parse_pyspy_json("  \n") == ()


@pytest.mark.parametrize("name, ranks, service", [
    ("watchdog_sglang.log", ["TP0", "TP1", "TP2", "TP3"], None),
    ("watchdog_dp.log", ["DP1_TP0", "DP1_TP1", "DP1_TP2", "DP1_TP3"], None),
    ("watchdog_compose.log", ["TP0", "TP1", "TP2", "TP3"], "decode-0"),
])
def test_watchdog_blocks(name: str, ranks: list[str], service: str | None) -> None:
    dumps = extract_watchdog_dumps(_read(name))
    assert [d.rank for d in dumps] == ranks
    assert [d.pid for d in dumps] == [7298, 7299, 7300, 7301]
    assert all(d.kind == "watchdog" and d.service == service and d.error is None for d in dumps)
    assert dumps[0].timestamp == "2026-12-02 10:20:24"
    assert all([t.name for t in d.threads] == THREADS for d in dumps)
    leaves = [_by_name(d.threads)["MainThread"].frames[0].function for d in dumps]
    assert leaves == ["Scheduler.recv_requests"] * 3 + ["Scheduler.all_reduce"]


def test_watchdog_failure_line_and_no_dump() -> None:
    log = ("[2026-12-02 10:20:24 TP2] Pyspy failed to dump PID 77. Error: Permission Denied\n"
           "[2026-12-02 10:20:25 TP2] Watchdog timeout (self.watchdog_timeout=300)\n")
    (d,) = extract_watchdog_dumps(log)
    assert (d.pid, d.rank, d.error) == (77, "TP2", "Permission Denied")
    assert extract_watchdog_dumps(_read("pyspy_basic.txt")) == ()


def test_a_dump_cut_mid_line_keeps_what_parsed_and_says_so() -> None:
    text = (DATA / "pyspy_basic.txt").read_text()
    whole = parse_pyspy_text(text)
    assert not whole[-1].truncated
    cut = parse_pyspy_text(text[: len(text) // 2])
    assert cut[-1].truncated and 0 < len(cut[-1].threads) <= len(whole[-1].threads)
    with pytest.raises(ParseError):  # a bad frame line that is not the cut one is still an error
        parse_pyspy_text(text[: len(text) // 2] + "\n" + text[len(text) // 2:])
