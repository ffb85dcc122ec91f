"""py-spy dumps: text (``py-spy dump``), JSON (``--json``), SGLang watchdog logs, failures."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from functools import lru_cache

from pdforensics.errors import ParseError
from pdforensics.parsers.stackmodel import Frame, ProcessDump, PyspyFailure, ThreadStack

_PROCESS = re.compile(r"^Process (\d+): ?(.*)$")
_PARENT = re.compile(r"^Parent Process (\d+): ?(.*)$")
_PYVER = re.compile(r"^Python v(\S+)")
_THREAD = re.compile(r'^Thread (0[xX][0-9A-Fa-f]+|\d+) \(([^)]*)\)(?:: "(.*)")?\s*$')
_NATIVE_EXT = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh", ".rs", ".S")
_SEPARATOR = re.compile(r"^-{20,}\s*$")
_VAR = re.compile(r"^(\S[^:]*): ?(.*)$")


def _is_native(function: str, file: str) -> bool:
    if function.startswith("0x") or file == "native":
        return True
    return ".so" in file or file.endswith(_NATIVE_EXT)


@lru_cache(maxsize=1 << 16)
def _parse_frame(body: str) -> Frame | None:
    """``func (file:line)`` / ``func (lib.so)`` / ``func ()``; None if not a frame line.

    Memoised: ranks of one server print the same frames, so one Frame serves them all.
    """
    if not body.endswith(")"):
        return None
    cut = body.rfind(" (")
    if cut < 0:
        return None
    function, loc = body[:cut], body[cut + 2 : -1]
    if not function or "(" in loc:
        return None
    file, colon, num = loc.rpartition(":")
    if colon and num.isdecimal() and num.isascii():
        return Frame(function, file, int(num), _is_native(function, file))
    return Frame(function, loc, None, _is_native(function, loc))


class _ThreadBuilder:
    __slots__ = ("tid", "state", "name", "frames", "section", "vars")

    def __init__(self, tid: str, state: str, name: str | None) -> None:
        self.tid, self.state, self.name = tid, state, name
        self.frames: list[Frame] = []
        self.section = ""
        self.vars: list[tuple[str, str]] = []

    def flush_vars(self) -> None:
        if self.vars and self.frames:
            f = self.frames[-1]
            self.frames[-1] = Frame(f.function, f.file, f.line, f.native, f.offset,
                                    f.locals + tuple(self.vars))
        self.vars = []

    def build(self) -> ThreadStack:
        self.flush_vars()
        return ThreadStack(self.tid, self.name, self.state, tuple(self.frames))


class _ProcessBuilder:
    __slots__ = ("pid", "command", "pyver", "ppid", "pcmd", "threads")

    def __init__(self, pid: int | None, command: str) -> None:
        self.pid, self.command = pid, command
        self.pyver: str | None = None
        self.ppid: int | None = None
        self.pcmd = ""
        self.threads: list[ThreadStack] = []

    def build(self) -> ProcessDump:
        return ProcessDump("pyspy", tuple(self.threads), self.pid, self.command, self.pyver,
                           self.ppid, self.pcmd)


# a login shell's banner (an rc file's echo) may precede the dump when the transport did not
# cut it: lines before the dump's first line are a preamble, not part of the dump
_DUMP_START = re.compile(r"^Process \d+: ", re.M)
_JSON_START = re.compile(r"^\s*\[", re.M)


def _after_preamble(text: str, start: re.Pattern[str]) -> str:
    """TEXT from its first dump line on, when other lines come before it."""
    m = start.search(text)
    return text[m.start():] if m is not None and m.start() > 0 else text


def parse_pyspy_text(text: str) -> tuple[ProcessDump, ...]:
    """Parse ``py-spy dump`` text (any of --native/--locals/--subprocesses).

    Text that is only a py-spy failure gives one ProcessDump with ``error`` set.
    """
    if not text.strip():
        return ()
    text = _after_preamble(text, _DUMP_START)
    procs: list[ProcessDump] = []
    proc: _ProcessBuilder | None = None
    thread: _ThreadBuilder | None = None
    in_error = False

    def close_thread() -> None:
        nonlocal thread
        if thread is not None and proc is not None:
            proc.threads.append(thread.build())
        thread = None

    def close_process() -> None:
        nonlocal proc
        close_thread()
        if proc is not None:
            procs.append(proc.build())
        proc = None

    frame_lines: dict[str, Frame] = {}  # raw frame line -> Frame: the hot path of big dumps
    lines = text.splitlines()
    # text cut mid-line (a byte cap, a killed py-spy): its last line may be half a frame
    cut_at = len(lines) if not text.endswith(("\n", "\r")) else 0
    truncated = False
    for lineno, raw in enumerate(lines, 1):
        hit = frame_lines.get(raw)
        if hit is not None and thread is not None and not in_error:
            if thread.vars:
                thread.flush_vars()
            thread.frames.append(hit)
            continue
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if line.startswith("    "):
            if in_error:
                continue
            if thread is None:
                raise ParseError("py-spy frame outside a thread", line, lineno)
            if line.startswith("            "):
                m = _VAR.match(line[12:])
                if m is None:  # a continuation of a long repr: append to the last value
                    if thread.vars:
                        name, val = thread.vars[-1]
                        thread.vars[-1] = (name, val + "\n" + line.strip())
                    continue
                thread.vars.append((m.group(1), m.group(2)))
                continue
            if line.startswith("        "):
                word = line.strip()
                if word in ("Arguments:", "Locals:"):
                    thread.section = word
                    continue
                raise ParseError("unexpected line in py-spy frame locals", line, lineno)
            frame = _parse_frame(line[4:].strip())
            if frame is None and lineno == cut_at:
                truncated = True
                break
            if frame is None:
                raise ParseError("unreadable py-spy frame", line, lineno)
            frame_lines[raw] = frame
            thread.flush_vars()
            thread.frames.append(frame)
            continue
        m = _THREAD.match(line)
        if m is not None:
            in_error = False
            close_thread()
            if proc is None:
                proc = _ProcessBuilder(None, "")
            thread = _ThreadBuilder(m.group(1), m.group(2), m.group(3))
            continue
        m = _PROCESS.match(line)
        if m is not None:
            in_error = False
            close_process()
            proc = _ProcessBuilder(int(m.group(1)), m.group(2).strip())
            continue
        m = _PARENT.match(line)
        if m is not None and proc is not None:
            proc.ppid, proc.pcmd = int(m.group(1)), m.group(2).strip()
            continue
        m = _PYVER.match(line)
        if m is not None and proc is not None:
            proc.pyver = m.group(1)
            continue
        if _SEPARATOR.match(line):
            close_process()
            continue
        if in_error:
            continue
        failure = classify_pyspy_error(line, None)
        if failure is not None or line.startswith(("Error:", "Caused by:", "Stack backtrace:")):
            close_thread()
            msg = failure.message if failure is not None else line.strip()
            if proc is None or proc.threads:
                close_process()
                procs.append(ProcessDump("pyspy", (), None, error=msg))
            elif not in_error:
                procs.append(ProcessDump("pyspy", (), proc.pid, proc.command, error=msg))
                proc = None
            in_error = True
            continue
        if lineno == cut_at:
            truncated = True
            break
        raise ParseError("unexpected line in py-spy dump", line, lineno)
    close_process()
    if truncated and procs:
        procs[-1] = dataclasses.replace(procs[-1], truncated=True)
    return tuple(procs)


def _json_frame(obj: object, cache: dict[tuple[object, ...], Frame]) -> Frame:
    if not isinstance(obj, dict):
        raise ParseError("py-spy JSON frame is not an object", repr(obj)[:200])
    name = obj.get("name")
    filename = obj.get("filename") or obj.get("short_filename") or ""
    line = obj.get("line")
    if not isinstance(name, str) or not isinstance(filename, str):
        raise ParseError("py-spy JSON frame lacks name/filename", repr(obj)[:200])
    lineno = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    raw_locals = obj.get("locals")
    loc: tuple[tuple[str, str], ...] = ()
    if isinstance(raw_locals, list):
        loc = tuple(
            (str(v.get("name", "")), str(v.get("repr", "")))
            for v in raw_locals
            if isinstance(v, dict)
        )
    key = (name, filename, lineno, loc)
    hit = cache.get(key)
    if hit is None:
        hit = Frame(name, filename, lineno, _is_native(name, filename), "", loc)
        cache[key] = hit
    return hit


def parse_pyspy_json(text: str) -> tuple[ProcessDump, ...]:
    """Parse ``py-spy dump --json`` (a list of thread objects); one ProcessDump per pid."""
    if not text.strip():
        return ()
    text = _after_preamble(text, _JSON_START)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        first = text.strip().splitlines()[0] if text.strip() else text
        raise ParseError(f"not py-spy JSON ({exc})", first) from None
    if not isinstance(data, list):
        raise ParseError("py-spy JSON is not a list of threads", text.strip()[:200])
    cache: dict[tuple[object, ...], Frame] = {}
    by_pid: dict[int | None, list[ThreadStack]] = {}
    for obj in data:
        if not isinstance(obj, dict):
            raise ParseError("py-spy JSON thread is not an object", repr(obj)[:200])
        frames_raw = obj.get("frames", [])
        if not isinstance(frames_raw, list):
            raise ParseError("py-spy JSON frames is not a list", repr(obj)[:200])
        pid = obj.get("pid")
        pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
        os_tid, tid = obj.get("os_thread_id"), obj.get("thread_id")
        if isinstance(os_tid, int) and not isinstance(os_tid, bool):
            thread_id = str(os_tid)
        elif isinstance(tid, int) and not isinstance(tid, bool):
            thread_id = f"0x{tid:X}"
        else:
            thread_id = "?"
        name = obj.get("thread_name")
        active, gil = obj.get("active") is True, obj.get("owns_gil") is True
        state = "active+gil" if active and gil else "active" if active else "gil" if gil else "idle"
        frames = tuple(_json_frame(f, cache) for f in frames_raw)
        by_pid.setdefault(pid, []).append(
            ThreadStack(thread_id, name if isinstance(name, str) else None, state, frames)
        )
    return tuple(ProcessDump("pyspy-json", tuple(ts), pid) for pid, ts in by_pid.items())


_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"py-spy: (?:command )?not found|No such file or directory.*py-spy|"
                r"py-spy: No such file|failed to run command .py-spy", re.I),
     "not_installed",
     "py-spy is not installed on the host: pip install py-spy (opt in with the install flag)"),
    (re.compile(r"Permission Denied|Operation not permitted|EPERM|ptrace.*denied", re.I),
     "permission",
     "run py-spy as root (sudo) or grant CAP_SYS_PTRACE (docker: --cap-add SYS_PTRACE); "
     "check /proc/sys/kernel/yama/ptrace_scope (0 or 1 with root)"),
    (re.compile(r"Failed to suspend process", re.I),
     "suspend_failed",
     "the process is in D or T state or being traced: read /proc/PID/status and "
     "/proc/PID/stack first, then retry with py-spy dump --nonblocking"),
    (re.compile(r"Failed to find python version|Failed to find a python interpreter|"
                r"Failed to get python version|not a python process|"
                r"Failed to find python interpreter", re.I),
     "not_python",
     "the pid is not a Python process (or a static/unsupported interpreter): dump the "
     "scheduler/worker pid instead, or use --native"),
    (re.compile(r"Failed to get process executable name|No such process|"
                r"process .* not found|Error: No such file or directory|"
                r"Failed to open process", re.I),
     "no_process",
     "the process is gone: re-run discovery (ps) and dump the current pid"),
    (re.compile(r"timed out|Timeout|deadline exceeded", re.I),
     "timeout",
     "py-spy hung (often waitpid on a D-state thread): use --nonblocking and a shorter timeout"),
)


def classify_pyspy_error(stderr: str, exit_status: int | None) -> PyspyFailure | None:
    """Classify why a py-spy run failed; None when it did not fail (or says nothing known)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for pattern, reason, fix in _FAILURES:
        for ln in lines:
            if pattern.search(ln):
                return PyspyFailure(reason, ln[:300], fix)
    if exit_status in (126, 127):
        return PyspyFailure("not_installed", lines[0][:300] if lines else f"exit {exit_status}",
                            _FAILURES[0][2])
    if exit_status in (124, 137):
        return PyspyFailure("timeout", lines[0][:300] if lines else f"exit {exit_status}",
                            _FAILURES[-1][2])
    if exit_status not in (0, None):
        err = next((ln for ln in lines if ln.startswith("Error:")), lines[0] if lines else "")
        return PyspyFailure("unknown", err[:300] or f"exit {exit_status}",
                            "read the py-spy message; check py-spy --version supports this Python")
    return None


# --- SGLang watchdog logs -------------------------------------------------------------

_LOG_PREFIX = re.compile(
    r"^\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)(?P<ranks>(?: [A-Z]{2}\d+)*)\] "
)
_PYSPY_HEAD = re.compile(r"Pyspy dump for PID (\d+):\s*(.*)$")
_PYSPY_FAIL = re.compile(r"Pyspy failed to dump PID (\d+)\.? ?(?:Error: )?(.*)$")
_COMPOSE = re.compile(r"^(?P<svc>[A-Za-z0-9][\w.-]*)\s+\| ?")
_JOURNAL = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: ")
_DUMP_LINE = re.compile(
    r"^(?:Process \d+|Parent Process \d+|Python v|Thread (?:0[xX])?[0-9A-Fa-f]+ "
    r"\(|-{20,}|    |Error:|Caused by:|Stack backtrace:|Permission Denied)"
)


def _strip_prefix(line: str) -> tuple[str, str | None]:
    m = _COMPOSE.match(line)
    if m is not None:
        return line[m.end():], m.group("svc")
    m2 = _JOURNAL.match(line)
    if m2 is not None:
        return line[m2.end():], None
    return line, None


def _rank_of(ranks: str) -> str | None:
    parts = ranks.split()
    return "_".join(parts) if parts else None


def extract_watchdog_dumps(log_text: str) -> tuple[ProcessDump, ...]:
    """Find ``Pyspy dump for PID N:`` blocks in an SGLang log; rank from the ``[.. TPn]`` prefix."""
    out: list[ProcessDump] = []
    lines = [_strip_prefix(ln.rstrip("\r")) for ln in log_text.splitlines()]
    i = 0
    while i < len(lines):
        line, svc = lines[i]
        i += 1
        pm = _LOG_PREFIX.match(line)
        if pm is None:
            continue
        rest = line[pm.end():]
        ts, rank = pm.group("ts"), _rank_of(pm.group("ranks"))
        fm = _PYSPY_FAIL.search(rest)
        if fm is not None:
            msg = fm.group(2).strip()
            j = i
            while j < len(lines) and not _LOG_PREFIX.match(lines[j][0]) and lines[j][0].strip():
                msg = msg or lines[j][0].strip()
                j += 1
            out.append(ProcessDump("watchdog", (), int(fm.group(1)), rank=rank, timestamp=ts,
                                   service=svc, error=msg or "py-spy failed"))
            i = j
            continue
        hm = _PYSPY_HEAD.search(rest)
        if hm is None:
            continue
        body: list[str] = [hm.group(2)] if hm.group(2).strip() else []
        while i < len(lines):
            nxt = lines[i][0]
            if _LOG_PREFIX.match(nxt) or (nxt.strip() and not _DUMP_LINE.match(nxt)):
                break
            body.append(nxt)
            i += 1
        try:
            dumps = parse_pyspy_text("\n".join(body))
        except ParseError as exc:
            dumps = (ProcessDump("pyspy", (), int(hm.group(1)), error=f"unreadable dump: {exc}"),)
        if not dumps:
            dumps = (ProcessDump("pyspy", (), int(hm.group(1)), error="empty py-spy dump"),)
        for d in dumps:
            out.append(ProcessDump("watchdog", d.threads, d.pid if d.pid is not None
                                   else int(hm.group(1)), d.command, d.python_version,
                                   d.parent_pid, d.parent_command, rank, ts, svc, d.error))
    return tuple(out)


def iter_frames(dumps: Iterable[ProcessDump]) -> Iterable[Frame]:
    """Every frame of every thread (test and benchmark helper)."""
    for d in dumps:
        for t in d.threads:
            yield from t.frames
