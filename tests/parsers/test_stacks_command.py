"""`pdforensics stacks`: exit codes per file outcome, stdin, and py-spy failures read only from
py-spy's output."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pdforensics.analysis.stacks_load import parse_stack_text
from pdforensics.cli import main
from pdforensics.errors import ExitStatus
from pdforensics.parsers.stackscan import scan_text

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
GOOD = FIELD / "pyspy" / "vllm-50835-enginecore.txt"
FAILED = FIELD / "pyspy_error" / "pyspy-83-suspend-eperm.txt"


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["stacks", *args], input=stdin)
    return res.exit_code, res.stdout, res.stderr


def test_a_file_without_threads_is_an_error_naming_it(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("the server was slow today\nrestarted it at noon\n")
    code, out, err = _run(str(junk))
    assert code == ExitStatus.ERROR and "notes.txt" in err and out == ""
    empty = tmp_path / "empty.log"
    empty.write_text("")
    code, out, err = _run(str(empty))
    assert code == ExitStatus.ERROR and "empty.log" in err and "0 threads" not in out


def test_several_files_skip_the_bad_ones_and_say_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("\n\n")
    code, out, err = _run(str(GOOD), str(empty), str(tmp_path / "missing.txt"))
    assert code == ExitStatus.PARTIAL
    assert "skipped" in err and "empty.log" in err and "missing.txt" in err
    assert out.startswith("1 threads in 1 processes")
    code, _, err = _run(str(empty), str(tmp_path / "missing.txt"))
    assert code == ExitStatus.ERROR and "no file held a stack dump" in err


def test_stdin() -> None:
    code, out, _ = _run("-", stdin=GOOD.read_text())
    assert code == ExitStatus.OK and "<stdin>" in out and "poll" in out


def test_pyspy_failure_alone_gives_cause_and_fix() -> None:
    code, out, err = _run(str(FAILED))
    assert code == ExitStatus.ERROR and "suspend_failed" in out and "fix: " in out
    assert "--nonblocking" in out and str(FAILED) in err


def test_log_lines_that_say_timed_out_are_not_pyspy_failures() -> None:
    log = ("2025-06-19T08:18:45.701Z ERROR request 17 timed out after 30s\n"
           "Error: upstream connect timed out\n"
           + GOOD.read_text())
    dumps = parse_stack_text(log)
    assert [d.error for d in dumps] == [None] and len(dumps[0].threads) == 1
    assert scan_text("[2025-01-01 00:00:00 TP0] Watchdog: timed out\n").dumps == ()


def test_goroutines_waiting_for_minutes_are_never_hidden() -> None:
    code, out, _ = _run(str(FIELD / "go" / "kube-batch-406-persistconn-minutes.txt"))
    assert code == ExitStatus.OK
    assert "4 goroutines have waited >= 1 minute, 4 of them filtered as noise" in out
    assert "Filtered as noise, yet waiting >= 1 minute:" in out
    assert "2 x [select] go keep-alive loop, waiting 3~5 min: net/http.(*persistConn).readLoop" in out
    assert "waiting 5~7 min: net/http.(*persistConn).writeLoop" in out


def test_every_sglang_pyspy_header_form() -> None:
    """The forms SGLang's watchdog and dump-before-crash helpers log (scheduler.py,
    utils/common.py, cudacore_pyspy_dump_utils.py across 0.4-0.5): with and without the
    command, failures with a PID or with the command only."""
    dump = GOOD.read_text()
    log = (f"[2026-01-29 13:12:37 PP2 TP1] Pyspy dump for PID 4085279:\n{dump}\n"
           f"[2026-01-29 13:13:37 DP1 TP3] Pyspy dump for PID 4085279 "
           f"(py-spy dump --native --pid 4085279):\n{dump}\n"
           "[2026-01-29 13:14:37 TP2] Pyspy failed to dump PID 77. Error: Permission Denied\n"
           "[2026-01-29 13:14:38 TP5] Pyspy failed (py-spy dump --native --pid 78). Error: "
           "Error: Failed to suspend process\n"
           "[2026-01-29 13:14:39 TP5] All pyspy dump attempts failed for PID 78.\n")
    dumps = scan_text(log).dumps
    assert [(d.kind, d.pid, d.rank) for d in dumps] == [
        ("watchdog", 4085279, "PP2_TP1"), ("watchdog", 4085279, "DP1_TP3"),
        ("watchdog", 77, "TP2"), ("watchdog", 78, "TP5")]
    assert [d.timestamp for d in dumps[:2]] == ["2026-01-29 13:12:37", "2026-01-29 13:13:37"]
    assert [len(d.threads) for d in dumps] == [1, 1, 0, 0]
    assert [d.error for d in dumps[2:]] == ["Permission Denied", "Error: Failed to suspend process"]


def test_client_dump_inside_kubectl_prefixes_reads_like_the_bare_one(tmp_path: Path) -> None:
    from pdforensics.analysis.engine import read_client_dump

    bare = FIELD / "go" / "moby-47364-minutes-mixed.txt"
    wrapped = tmp_path / "client.log"
    wrapped.write_text("".join(f"[pod/router-7d9/client] {ln}\n"
                               for ln in bare.read_text().split("\n")[:-1]))
    a, b = read_client_dump(bare), read_client_dump(wrapped)
    assert a.error is None and b.error is None and len(a.goroutines) == 4
    assert [(g.thread_id, g.frames) for g in a.goroutines] == [
        (g.thread_id, g.frames) for g in b.goroutines]


def test_debug1_without_the_total_line() -> None:
    text = (FIELD / "go" / "unbounded-guide-debug1-fixed.txt").read_text()
    with_total = parse_stack_text(text)
    without = parse_stack_text(text.split("\n", 1)[1])
    assert [(t.count, t.frames) for d in without for t in d.threads] == [
        (t.count, t.frames) for d in with_total for t in d.threads]
    assert sum(t.count for d in without for t in d.threads) == 103
