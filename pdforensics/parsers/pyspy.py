"""py-spy dumps: text (``py-spy dump``), JSON (``--json``), SGLang watchdog logs, failures."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from functools import lru_cache

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.hostnum import to_int
from pdforensics.parsers.frames import Frame, ProcessDump, ThreadStack
from pdforensics.parsers.pyspy_errors import classify_pyspy_error as classify_pyspy_error
from pdforensics.parsers.pyspy_errors import is_failure_line

_PROCESS = linear.compile(r"^Process (\d+): ?(.*)$")
_PARENT = linear.compile(r"^Parent Process (\d+): ?(.*)$")
_PYVER = linear.compile(r"^Python v(\S+)")
#: py-spy's thread line; a paste that dropped the id ('Thread (idle) "MainThread"') too
_THREAD = linear.compile(r'^Thread (?:(0[xX][0-9A-Fa-f]+|\d+) )?\(([^)]*)\)(?::? "(.*)")?\s*$')
_NATIVE_EXT = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh", ".rs", ".S")
_SEPARATOR = linear.compile(r"^-{20,}\s*$")
_VAR = linear.compile(r"^(\S[^:]*): ?(.*)$")


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
        return Frame(function, file, to_int(num), _is_native(function, file))
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


_HEADERLESS_FRAMES = 3  # frames with no Thread line at all: a stack, read as one thread


class _ProcessBuilder:
    __slots__ = ("pid", "command", "pyver", "ppid", "pcmd", "threads", "in_command")

    def __init__(self, pid: int | None, command: str) -> None:
        self.pid, self.command = pid, command
        self.pyver: str | None = None
        self.ppid: int | None = None
        self.pcmd = ""
        self.threads: list[ThreadStack] = []
        self.in_command = pid is not None  # a `python -c` command line spans lines until "Python v"

    def build(self) -> ProcessDump:
        return ProcessDump("pyspy", tuple(self.threads), self.pid, self.command.strip(),
                           self.pyver, self.ppid, self.pcmd)


def _frame_body(line: str) -> str | None:
    """The text of a frame line (4-space or tab indented, as py-spy 0.1-0.4 print), else None."""
    if line.startswith("    ") and not line.startswith("        "):
        return line[4:].strip()
    if line.startswith("\t"):
        return line.strip()
    return None


def _bare_frame(body: str) -> Frame:
    """A frame line without a location part (a long C++ symbol, a truncated name)."""
    return Frame(body, "", None, "::" in body or body.startswith("0x"))


class _TextParser:
    """State machine over py-spy text; one instance per call."""

    def __init__(self, text: str) -> None:
        self.procs: list[ProcessDump] = []
        self.proc: _ProcessBuilder | None = None
        self.thread: _ThreadBuilder | None = None
        self.in_error = False
        self.err_lines: list[str] = []  # the failure text of the last error dump
        self.orphan: list[Frame] = []  # frames before the first Thread line (a dump cut at the top)
        self.orphan_line: tuple[str, int] | None = None
        self.seen_thread = False
        self.truncated = False
        self.cache: dict[str, Frame] = {}
        self.lines = text.splitlines()
        self.cut_at = len(self.lines) if not text.endswith(("\n", "\r")) else 0

    def close_thread(self) -> None:
        if self.thread is not None and self.proc is not None:
            self.proc.threads.append(self.thread.build())
        self.thread = None

    def close_process(self) -> None:
        self.close_thread()
        if self.proc is not None:
            self.procs.append(self.proc.build())
        self.proc = None

    def run(self) -> tuple[ProcessDump, ...]:
        for lineno, raw in enumerate(self.lines, 1):
            if self.in_error and raw.strip() and not _HEADERS.match(raw):
                self.err_lines.append(raw.strip())
            try:
                if not self.line(raw.rstrip("\r"), raw, lineno):
                    break
            except ParseError:
                if lineno != self.cut_at:
                    raise
                self.truncated = True  # the cut last line: half a frame, half a local
                break
        self.end_error()
        self.close_process()
        if self.orphan_line is not None and not self.seen_thread:
            if len(self.orphan) >= _HEADERLESS_FRAMES and not self.procs:
                # a stack copied without its header (Ray's dashboard "Stack Trace"): one thread
                return (ProcessDump("pyspy", (ThreadStack("?", None, "", tuple(self.orphan)),)),)
            raise ParseError("py-spy frame outside a thread", *self.orphan_line)
        if self.truncated and self.procs:
            self.procs[-1] = dataclasses.replace(self.procs[-1], truncated=True)
        return tuple(self.procs)

    def line(self, line: str, raw: str, lineno: int) -> bool:
        """Consume one line; False stops the parse (the cut last line)."""
        if (self.proc is not None and self.proc.in_command and not _HEADERS.match(line)
                and not is_failure_line(line)):
            self.proc.command += "\n" + line
            return True
        if self.proc is not None:
            self.proc.in_command = False
        hit = self.cache.get(raw)
        if hit is not None and self.thread is not None and not self.in_error:
            self.thread.flush_vars()
            self.thread.frames.append(hit)
            return True
        if not line.strip():
            return True
        if line.startswith("            ") or line.startswith("        "):
            if not self.in_error:
                self.local_line(line, lineno)
            return True
        body = _frame_body(line)
        if body is not None:
            return self.in_error or self.frame_line(body, raw, line, lineno)
        return self.header_line(line, lineno)

    def local_line(self, line: str, lineno: int) -> None:
        th = self.thread
        if th is None:
            raise ParseError("py-spy frame outside a thread", line, lineno)
        if line.startswith("            "):
            m = _VAR.match(line[12:])
            if m is None:  # a continuation of a long repr: append to the last value
                if th.vars:
                    name, val = th.vars[-1]
                    th.vars[-1] = (name, val + "\n" + line.strip())
                return
            th.vars.append((m.group(1), m.group(2)))
            return
        word = line.strip()
        if word not in ("Arguments:", "Locals:"):
            raise ParseError("unexpected line in py-spy frame locals", line, lineno)
        th.section = word

    def frame_line(self, body: str, raw: str, line: str, lineno: int) -> bool:
        frame = _parse_frame(body)
        if frame is None and lineno == self.cut_at:
            self.truncated = True
            return False
        if frame is None:
            if not body:
                raise ParseError("unreadable py-spy frame", line, lineno)
            frame = _bare_frame(body)
        else:
            self.cache[raw] = frame
        if self.thread is None:
            if self.proc is not None or self.seen_thread:
                raise ParseError("py-spy frame outside a thread", line, lineno)
            self.orphan.append(frame)
            self.orphan_line = self.orphan_line or (line, lineno)
            return True
        self.thread.flush_vars()
        self.thread.frames.append(frame)
        return True

    def header_line(self, line: str, lineno: int) -> bool:
        m = _THREAD.match(line)
        if m is not None:
            self.end_error()
            self.in_error = False
            self.close_thread()
            if self.proc is None:
                self.proc = _ProcessBuilder(None, "")
            if self.orphan and not self.seen_thread:
                self.proc.threads.append(ThreadStack("?", None, "", tuple(self.orphan)))
            self.seen_thread = True
            self.thread = _ThreadBuilder(m.group(1) or "?", m.group(2), m.group(3))
            return True
        m = _PROCESS.match(line)
        if m is not None:
            self.end_error()
            self.in_error = False
            self.close_process()
            self.proc = _ProcessBuilder(to_int(m.group(1)), m.group(2).strip())
            return True
        return self.meta_line(line, lineno)

    def meta_line(self, line: str, lineno: int) -> bool:
        m = _PARENT.match(line)
        if m is not None and self.proc is not None:
            self.proc.ppid, self.proc.pcmd = to_int(m.group(1)), m.group(2).strip()
            return True
        m = _PYVER.match(line)
        if m is not None and self.proc is not None:
            self.proc.pyver = m.group(1)
            return True
        if _SEPARATOR.match(line):
            self.close_process()
            return True
        if self.in_error:
            return True
        if is_failure_line(line):
            self.failure(line)
            return True
        if lineno == self.cut_at:
            self.truncated = True
            return False
        raise ParseError("unexpected line in py-spy dump", line, lineno)

    def end_error(self) -> None:
        """Give the last error dump all of py-spy's failure text (Reason:, Caused by:, ...)."""
        if self.in_error and self.err_lines and self.procs and self.procs[-1].error is not None:
            text = "\n".join(self.err_lines)[:2000]
            self.procs[-1] = dataclasses.replace(self.procs[-1], error=text)
        self.err_lines = []

    def failure(self, line: str) -> None:
        self.end_error()
        self.close_thread()
        found = classify_pyspy_error(line, None)
        msg = found.message if found is not None else line.strip()
        self.err_lines = [msg]
        if self.proc is None or self.proc.threads:
            self.close_process()
            self.procs.append(ProcessDump("pyspy", (), None, error=msg))
        else:
            self.procs.append(ProcessDump("pyspy", (), self.proc.pid, self.proc.command.strip(),
                                          error=msg))
            self.proc = None
        self.in_error = True


_HEADERS = linear.compile(r"^(?:Python v\S|Parent Process \d+|Process \d+: |"
                          r"Thread (?:(?:0[xX][0-9A-Fa-f]+|\d+) )?\(|-{20,}\s*$)")


def parse_pyspy_text(text: str) -> tuple[ProcessDump, ...]:
    """Parse ``py-spy dump`` text (0.1-0.4; --native, --locals, --subprocesses).

    Frames before the first Thread line (text cut at the top) form a thread ``?``; frame
    lines without a location are kept as bare frames. Text that is only a py-spy failure
    gives one ProcessDump with ``error`` set.
    """
    if not text.strip():
        return ()
    return _TextParser(_after_banner(text)).run()


# a login shell's banner (an rc file's echo, a motd) before the dump: unindented lines that
# come before the first `Process N:` or `Thread 0x` line, with no frame among them
_DUMP_START = linear.compile(r"^(?:Process \d+: |Thread 0x)", linear.M)


def _after_banner(text: str) -> str:
    m = _DUMP_START.search(text)
    if m is None or m.start() == 0:
        return text
    before = text[:m.start()]
    if any(ln.startswith((" ", "\t")) for ln in before.splitlines()):
        return text  # frames before the first header: a dump cut at the top, not a banner
    return text[m.start():]


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


_JSON_START = linear.compile(r"^\s*\[", linear.M)


def parse_pyspy_json(text: str) -> tuple[ProcessDump, ...]:
    """Parse ``py-spy dump --json`` (a list of thread objects); one ProcessDump per pid."""
    if not text.strip():
        return ()
    start = _JSON_START.search(text)  # a login banner may precede the JSON: a preamble
    if start is not None and start.start() > 0:
        text = text[start.start():]
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


# --- SGLang watchdog logs -------------------------------------------------------------

_LOG_PREFIX = linear.compile(
    r"^\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)(?P<ranks>(?: [A-Z]{2}\d+)*)\] "
)
_PYSPY_HEAD = linear.compile(r"Pyspy dump for PID (\d+)(?: \([^)]*\))?:\s*(.*)$")
_PYSPY_FAIL = linear.compile(r"Pyspy failed to dump PID (\d+)\.? ?(?:Error: )?(.*)$")
_COMPOSE = linear.compile(r"^(?P<svc>[A-Za-z0-9][\w.-]*)\s+\| ?")
_JOURNAL = linear.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: ")
_DUMP_LINE = linear.compile(
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
            out.append(ProcessDump("watchdog", (), to_int(fm.group(1)), rank=rank, timestamp=ts,
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
            dumps = (ProcessDump("pyspy", (), to_int(hm.group(1)), error=f"unreadable dump: {exc}"),)
        if not dumps:
            dumps = (ProcessDump("pyspy", (), to_int(hm.group(1)), error="empty py-spy dump"),)
        for d in dumps:
            out.append(ProcessDump("watchdog", d.threads, d.pid if d.pid is not None
                                   else to_int(hm.group(1)), d.command, d.python_version,
                                   d.parent_pid, d.parent_command, rank, ts, svc, d.error))
    return tuple(out)


def iter_frames(dumps: Iterable[ProcessDump]) -> Iterable[Frame]:
    """Every frame of every thread (test and benchmark helper)."""
    for d in dumps:
        for t in d.threads:
            yield from t.frames
