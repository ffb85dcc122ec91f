"""Why a py-spy run failed, and what fixes it: read from py-spy's own output only."""

from __future__ import annotations

from collections.abc import Iterable

from pdforensics import linear
from pdforensics.parsers.frames import PyspyFailure
from pdforensics.parsers.linescan import SMALL, line_numbers, only_newlines

_ERROR_LINE = linear.compile(r"Error\s*:")

# A line py-spy (or SGLang's wrapper around it) prints when it fails. Only such lines are
# classified: a log line that merely says "timed out" is not a py-spy failure.
_FAILURE_LINE = linear.compile(
    r"^\s*(?:Error\s*:|Reason\s*:|Caused by:|Permission Denied|\d+: .*\(os error \d+\))"
    r"|py-spy|py_spy|Pyspy failed|Failed to (?:suspend|get stack trace|open process|find python"
    r"|get process executable|copy Py_Version)", linear.I)

_FIX_PERMISSION = ("run py-spy as root (sudo) or grant CAP_SYS_PTRACE (docker: --cap-add "
                   "SYS_PTRACE; k8s: securityContext.capabilities.add [SYS_PTRACE]); check "
                   "/proc/sys/kernel/yama/ptrace_scope (0, or 1 with root)")
_FIX_TIMEOUT = ("py-spy hung (often waitpid on a D-state thread): read /proc/PID/status and "
                "/proc/PID/stack, then retry with py-spy dump --nonblocking and a shorter timeout")

#: (cause, pattern, fix), most specific first; the first cause any failure line matches wins.
FAILURES: tuple[tuple[str, linear.Pattern[str], str], ...] = (
    ("not_installed",
     linear.compile(r"py-spy: (?:command )?not found|py-spy: No such file|No such file or directory"
                r".*py-spy|failed to run command .?py-spy|executable file not found.*py-spy", linear.I),
     "py-spy is not installed where it ran (SGLang's watchdog calls it from the server's "
     "environment): pip install py-spy in that image/venv, or opt in to the install flag"),
    ("suspend_failed", linear.compile(r"Failed to suspend process", linear.I),
     "ptrace could not stop the target (D or T state, or already traced by gdb/another "
     "py-spy): read /proc/PID/status and /proc/PID/stack, then retry with py-spy dump "
     "--nonblocking"),
    ("native_unsupported",
     linear.compile(r"failed to get os threadid|Failed to (?:get|find) native|libunwind|"
                r"unwind.*(?:fail|error)", linear.I),
     "--native could not map Python threads to OS threads (usually py-spy and the target are "
     "in different PID namespaces): run py-spy inside the target's container, or drop --native"),
    ("unsupported_python",
     linear.compile(r"Failed to copy Py_Version|Unsupported version of Python|unknown .*offset|"
                r"failed to get gil_thread_id", linear.I),
     "this py-spy cannot read the target's Python version: upgrade py-spy (0.4.x reads "
     "3.12/3.13), or use pystack remote PID"),
    ("not_python",
     linear.compile(r"Failed to find (?:a )?python (?:version|interpreter)|Failed to get python "
                r"version|not a python process", linear.I),
     "the pid is not a Python interpreter (a shell, a Go/C++ helper or a static binary): "
     "dump the scheduler/worker pid instead (children of launch_server)"),
    ("permission",
     linear.compile(r"Permission Denied|Operation not permitted|EPERM|Access is denied|"
                r"ptrace.*denied|os error (?:1|5|13)\)", linear.I),
     _FIX_PERMISSION),
    ("no_such_process",
     linear.compile(r"No such process|Failed to get process executable name|Failed to open process"
                r"|process \d+ .*not found|os error 3\)|No child process", linear.I),
     "the process is gone (exited or restarted): re-run discovery (ps) and dump the current pid"),
    ("file_not_found",
     linear.compile(r"No such file or directory|os error 2\)", linear.I),
     "py-spy could not open a file of the target: its python binary was replaced since it "
     "started (readlink /proc/PID/exe ends in '(deleted)'), or it runs in another mount "
     "namespace: run py-spy inside the target's container, or restart the process"),
    ("timeout", linear.compile(r"timed out|timeout|deadline exceeded", linear.I), _FIX_TIMEOUT),
)

_UNKNOWN_FIX = ("read py-spy's message; check that py-spy --version supports this Python and "
                "retry with --nonblocking")


#: _FAILURE_LINE without its anchor, over bytes: every line it matches holds a match of this
FAILURE_SUPERSET = linear.compile(
    rb"Error\s*:|Reason\s*:|Caused by:|Permission Denied|\d+: .*\(os error \d+\)|py-spy|py_spy|"
    rb"Pyspy failed|Failed to (?:suspend|get stack trace|open process|find python|"
    rb"get process executable|copy Py_Version)", linear.I)


def failure_lines(text: str) -> list[str]:
    """The lines of ``text`` that py-spy prints when it fails (Error:, Reason:, ...); in a
    large text whose lines break at \\n alone, only the lines one scan finds are tried."""
    if len(text) >= SMALL and only_newlines(text):
        every = text.split("\n")
        lines: Iterable[str] = (every[no - 1] for no in line_numbers(text, FAILURE_SUPERSET))
    else:
        lines = text.splitlines()
    return [ln.strip() for ln in lines if ln.strip() and _FAILURE_LINE.search(ln)]


def is_failure_line(line: str) -> bool:
    """Whether one line reads as py-spy failure output."""
    return bool(line.strip()) and _FAILURE_LINE.search(line) is not None


def _error_line(lines: list[str]) -> str:
    return next((ln for ln in lines if _ERROR_LINE.match(ln)), lines[0] if lines else "")


def classify_pyspy_error(stderr: str, exit_status: int | None) -> PyspyFailure | None:
    """Classify why a py-spy run failed; None when it did not fail (or its output says nothing).

    Only py-spy's failure lines are read; the cause is the most specific one any of them
    names, and the message is the line that named it.
    """
    lines = failure_lines(stderr)
    for reason, pattern, fix in FAILURES:
        for ln in lines:
            if pattern.search(ln):
                err = next((e for e in lines if _ERROR_LINE.match(e)), ln)
                return PyspyFailure(reason, err[:300], fix)
    if exit_status in (126, 127):
        return PyspyFailure("not_installed", (lines[0] if lines else f"exit {exit_status}")[:300],
                            FAILURES[0][2])
    if exit_status in (124, 137):
        return PyspyFailure("timeout", (lines[0] if lines else f"exit {exit_status}")[:300],
                            _FIX_TIMEOUT)
    if exit_status not in (0, None):
        err = _error_line(lines) or next((ln.strip() for ln in stderr.splitlines() if ln.strip()),
                                         "")
        return PyspyFailure("unknown", err[:300] or f"exit {exit_status}", _UNKNOWN_FIX)
    return None
