"""Python failures in any text: a traceback's exception line (what the failing code raised),
faulthandler's "Fatal Python error" with its current thread, placed by the SGLang functions
its frames run through (analysis/pdpath/place.py FRAME_STAGES)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue, Side, Stage
from pdforensics.analysis.pdpath.place import frames_role, frames_stage, side_of_words
from pdforensics.analysis.pdpath.read_sglang import ids
from pdforensics.analysis.pdpath.sources import Source, lines, reader
from pdforensics.analysis.pdpath.traceback_lines import CANCELLED_WHY as _CANCELLED_WHY
from pdforensics.analysis.pdpath.traceback_lines import CARET as _CARET
from pdforensics.analysis.pdpath.traceback_lines import CHAIN_CUT_WHY as _CHAIN_CUT_WHY
from pdforensics.analysis.pdpath.traceback_lines import CHAIN_WHY as _CHAIN_WHY
from pdforensics.analysis.pdpath.traceback_lines import CHAINED as _CHAINED
from pdforensics.analysis.pdpath.traceback_lines import EXC_LINE as _EXC_LINE
from pdforensics.analysis.pdpath.traceback_lines import EXC_QUALIFIED, MP_PROCESS, mangled_frames
from pdforensics.analysis.pdpath.traceback_lines import FRAME as _FRAME
from pdforensics.analysis.pdpath.traceback_lines import IMPORT_ERRORS as _IMPORT_ERRORS
from pdforensics.analysis.pdpath.traceback_lines import INTERRUPT_WHY as _INTERRUPT_WHY
from pdforensics.analysis.pdpath.traceback_lines import TIMEOUT_WHY as _TIMEOUT_WHY
from pdforensics.parsers.journal import parse_log_timestamp, parse_rank
from pdforensics.parsers.linescan import has_any, line_numbers, lines_with, marks, split_lines
from pdforensics.parsers.logprefix import strip_prefixes
from pdforensics.parsers.logtime import NewestStamp
from pdforensics.parsers.ray_prefix import process_at

_FATAL = linear.compile(r"^Fatal Python error: (.{1,300})$")
_CURRENT = linear.compile(r"^(Current thread 0x[0-9a-fA-F]{1,16}|Stack) \(most recent call first\):")
_NEAR = 4  # an exception line at most this many lines after a frame belongs to its traceback
_MAX_TEXT = 500


def _side(exc: str, role: str | None) -> Side | None:
    low = exc.lower()
    named = side_of_words(exc)
    if named in ("collective", "transfer_engine", "host"):  # it names whose code failed
        return named
    if "cuda" in low and "out of memory" not in low and "cuda graph" not in low \
            and "illegal memory access" not in low:  # (a kernel's bug: the server's, not the GPU's)
        return "gpu"  # (a CUDA graph that failed to capture is the software's, not the GPU's)
    return None  # (the writer's role, where nothing else names a side: reason._side_of)


#: a line that can be a frame or a caret line holds one of these (a superset)
_FRAME_OR_CARET = linear.compile(rb'File "|[\^~]{3}')


def _stamp(line: str) -> float | None:
    return parse_log_timestamp(line) if line[:1] == "[" or line[:1].isdigit() else None


@reader("python_exceptions")
def exception_clues(src: Source) -> Iterator[Clue]:
    """Each traceback's exception line (a cause): the frames and code above it say where.

    Only the lines near a frame or a caret line can end a traceback: those are read (one scan
    of the text finds the frames); every other line only sets `recent`, and the time of an
    exception line is that of the newest stamped line at or before it."""
    if ("File \"" not in src.text and "^^^" not in src.text and "~~~" not in src.text) \
            or src.kind in ("metrics", "server_info", "load"):
        return  # (a traceback's tail pasted alone keeps its caret line)
    every = split_lines(src.text)
    funcs: list[str] = []
    code: list[str] = []
    last_frame = -_NEAR - 1
    times = NewestStamp(every, _stamp)
    recent: list[str] = []  # the line before a traceback's tail (its failing code)
    anchors = line_numbers(src.text, _FRAME_OR_CARET)
    k = 0
    no = 0
    innermost: tuple[int, str] | None = None  # the last frame line read
    run_head = ""
    head_rank: str | None = None  # the rank of the line a run of frames follows
    # an exception line just above a run of frames ("AssertionError: ..." logged before the
    # "Scheduler hit an exception: Traceback" record it ends): (number, text, raw line)
    ahead: tuple[int, str, str] | None = None
    said: set[int] = set()  # the exception lines already read as the end of a traceback
    while True:
        no += 1
        if no > len(every):
            if funcs and innermost is not None and len(every) - last_frame <= _NEAR:
                ahead = ahead if ahead is not None and ahead[0] not in said else None
                end = _ends_inside(src, every, times, innermost, funcs, code, run_head, ahead,
                                   head_rank, bool(said))
                if end is not None:
                    yield end
            return
        if no - last_frame > _NEAR:  # far from any frame: jump to the next line that can be one
            while k < len(anchors) and anchors[k] < no:
                k += 1
            if k == len(anchors):
                return
            if anchors[k] > no:  # the lines skipped are far ones: the last sets `recent`
                no = anchors[k]
                # (as the walk reads it: without the line's log prefixes)
                recent = [strip_prefixes(every[no - 2].rstrip("\r")).text.strip()]
        raw = every[no - 1].rstrip("\r")
        line = strip_prefixes(raw).text  # (a logger's, compose's, Ray's prefix on each line)
        if _CARET.match(line):  # a traceback's caret line: its tail even without a frame line
            last_frame = max(last_frame, no - 1)
        fm = _FRAME.match(line)
        if fm is not None:
            if no - last_frame > _NEAR + 8:
                funcs, code = [], []
            if not funcs:  # a run of frames begins: the line before it says what prints it
                run_head = " ".join(every[max(0, no - 4):no - 1])  # (and which rank)
                head_rank = parse_rank(every[no - 2]) if no >= 2 else None
                ahead = _exception_ahead(every, no)
            funcs.insert(0, fm.group(2))
            last_frame = no
            innermost = (no, line.strip())
            continue
        if no - last_frame > _NEAR or not line.strip():
            recent = [line.strip()]
            continue
        m = _EXC_LINE.match(line.strip()) or EXC_QUALIFIED.match(line.strip())
        if m is None:
            code.insert(0, line.strip())
            continue
        when = times.at(no - 1)
        code.extend(recent)
        role = frames_role(funcs) or src.role
        exc = line.strip()
        if m.group(2) is None:  # a bare "AssertionError": the failing code says what failed
            failing = next((x for x in code if x and _CARET.match(x) is None), None)
            exc = f"{exc} ({failing})" if failing else exc
        yield _exception(src, exc, no, when, frames_stage(funcs, code, role), role, raw,
                         run_head, head_rank, bool(said))
        said.add(no)
        funcs, code, last_frame = [], [], -_NEAR - 1


def _ends_inside(src: Source, every: Sequence[str], times: NewestStamp, innermost: tuple[int, str],
                 funcs: list[str], code: list[str], run_head: str,
                 ahead: tuple[int, str, str] | None, head_rank: str | None, earlier: bool
                 ) -> Clue | None:
    """The text ends inside a traceback (cut before its exception line): the exception line
    logged just above it where there is one, else its innermost frame (`_cut_at_end`);
    ``earlier``: an exception was read before it in the text."""
    if ", in " not in innermost[1] or "most recent call first" in run_head:
        return None  # (a traceback's frame says "line N, in f"; faulthandler's "line N in f",
        # and gdb's py-bt is headed "most recent call first": samples, not a raise)
    after = strip_prefixes(every[innermost[0]]).text.strip() if innermost[0] < len(every) else ""
    if after and _FRAME.match(after) is None and _CARET.match(after) is None:
        innermost = (innermost[0], f"{innermost[1]}: {after}")  # its failing code
    if ahead is not None:  # its exception, printed before it
        role = frames_role(funcs) or src.role
        return _exception(src, ahead[1], ahead[0], times.at(ahead[0] - 1),
                          frames_stage(funcs, code, role), role, ahead[2], run_head, head_rank,
                          earlier)
    cut = _cut_at_end(src, innermost, funcs, code, head_rank)
    if not _CHAINED.search(run_head):
        return cut
    return replace(cut, label="consequence", why=cut.why + _CHAIN_WHY) if earlier \
        else replace(cut, why=cut.why + _CHAIN_CUT_WHY)


def _exception_ahead(every: Sequence[str], first_frame: int) -> tuple[int, str, str] | None:
    """The one exception line with its message among the three lines above a traceback's
    first frame (1-based ``first_frame``): (its number, text, raw line); None where there are
    none or several (errors of other calls, logged before it: which one it ends is not said)."""
    found = []
    for no in range(first_frame - 1, max(0, first_frame - 4), -1):
        raw = every[no - 1].rstrip("\r")
        text = strip_prefixes(raw).text.strip()
        m = _EXC_LINE.match(text)
        if (m is not None and m.group(2) is not None) or _EXC_REPR.match(text) is not None:
            found.append((no, text, raw))
    return found[0] if len(found) == 1 else None


#: an exception logged as its repr before its traceback (vLLM's engine: "AssertionError()",
#: "ValueError('bad shape')")
_EXC_REPR = linear.compile(r"^(?:[A-Za-z_]\w{0,60}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception)\(.{0,800}\)$")


def _exception(src: Source, exc: str, no: int, when: float | None, stage: Stage | None,
               role: str | None, raw: str, run_head: str, head_rank: str | None,
               earlier: bool) -> Clue:
    """The exception line a traceback ends with: a cause, or the consequence of the one a
    chain printed above it (``earlier``: the text holds an exception before it); its rank is
    its own prefix's, else that of the line its frames follow ("[... TP0] Traceback (most
    recent call last):"); its process, where no rank is printed, the one a Ray prefix or
    multiprocessing's header ("Process Process-6:") names."""
    rids, rooms = ids(exc)
    name, held = exc.split(":", 1)[0].split(" ", 1)[0], False
    chain = _CHAINED.search(run_head) is not None
    chained = chain and earlier
    named = MP_PROCESS.search(run_head)
    if name.endswith("CancelledError"):
        chained, why = True, _CANCELLED_WHY  # a task some other party cancelled
    elif name.rsplit(".", 1)[-1] == "TimeoutError":
        chained, why, held = True, _TIMEOUT_WHY, True  # a wait that ran out
    elif name == "KeyboardInterrupt":  # Ctrl-C, or a supervisor's SIGINT
        chained, why = True, _INTERRUPT_WHY
    else:
        why = _CHAIN_WHY if chained else _CHAIN_CUT_WHY if chain else ""
    rank = parse_rank(raw) or head_rank
    return Clue(key="PYTHON_EXCEPTION", label="consequence" if chained else "cause",
                text=exc[:_MAX_TEXT], source=src.path, line=no, time=when,
                stage=stage or ("startup" if name.rsplit(".", 1)[-1] in _IMPORT_ERRORS else None),
                side=_side(exc, role), role=role, host=src.host,
                rank=rank, rids=rids, rooms=rooms, wedge=held, suspect=None if rank
                else process_at(src.processes, no) if src.processes else named and named[1],
                strength=3, why="the exception a traceback ends with: what the failing code "
                                "raised" + why)



def _cut_at_end(src: Source, innermost: tuple[int, str], funcs: list[str],
                code: list[str], rank: str | None) -> Clue:
    """A traceback the text ends inside (a paste cut before its exception line): the
    innermost frame is where it raised, the frames say the stage; a traceback is a crash."""
    role = frames_role(funcs) or src.role
    # cut inside a collective (SGLang's DP-attention batch sync, a broadcast, an all-reduce):
    # the collective is the side
    side: Side | None = "collective" if any(w in fn for fn in funcs[:1]
                                            for w in _COLLECTIVE_FUNCS + _SYNC_FUNCS) else None
    return Clue(key="PYTHON_TRACEBACK_CUT", label="cause", text=innermost[1][:_MAX_TEXT],
                source=src.path, line=innermost[0], stage=frames_stage(funcs, code, role),
                role=role, side=side, host=src.host, rank=rank, wedge=False, strength=2,
                suspect=process_at(src.processes, innermost[0]) if src.processes and not rank
                else None,
                why="a traceback cut before its exception line: its innermost frame is where "
                    "it raised")


#: Python's threading excepthook: "Exception in thread Thread-5 (bootstrap_thread):"
_THREAD_MARKS = marks("Exception in thread")
_THREAD_EXC = linear.compile(r"^Exception in thread ([^\s(:]{1,120})(?: \((\w{1,120})\))?:\s*$")


@reader("thread_exceptions")
def thread_exception_clues(src: Source) -> Iterator[Clue]:
    """A thread that died of an exception (the header Python prints before its traceback):
    a consequence of the exception the traceback ends with; it names the thread (its target
    function where Python gives one) to look at."""
    if not has_any(src.text, _THREAD_MARKS):
        return
    seen: set[str] = set()
    for no, line in lines_with(src.text, ("Exception in thread",)):
        m = _THREAD_EXC.match(line.strip())
        if m is None or m.group(0) in seen:
            continue
        seen.add(m.group(0))
        yield Clue(key="THREAD_EXCEPTION", label="consequence", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   suspect=m.group(2) or m.group(1), wedge=False, strength=1,
                   why="Python: this thread ended on an uncaught exception (its traceback "
                       "follows); the thread is gone, whatever it served waits or fails")


#: the line Python prints between two tracebacks of one chain, as printed
_CHAIN_LINES = ("The above exception was the direct cause of the following exception:",
                "During handling of the above exception, another exception occurred:")
_CHAIN_MARKS = marks(*_CHAIN_LINES)


@reader("python_chain_lines")
def chain_line_clues(src: Source) -> Iterator[Clue]:
    """Python's line between two tracebacks of one chain: it says the exception below followed
    from the one above (a consequence, as the later traceback is)."""
    if not has_any(src.text, _CHAIN_MARKS):
        return
    for no, line in lines_with(src.text, _CHAIN_LINES)[:_MAX_CHAIN_LINES]:
        text = strip_prefixes(line.rstrip("\r")).text.strip()
        if text in _CHAIN_LINES:
            yield Clue(key="PYTHON_CHAINED", label="consequence", text=text, source=src.path,
                       line=no, time=_stamp(line), role=src.role, host=src.host, strength=1,
                       why="Python: the exception below was raised because of, or while "
                           "handling, the one above it")


_MAX_CHAIN_LINES = 20


@reader("faulthandler_fatal")
def fatal_clues(src: Source) -> Iterator[Clue]:
    """faulthandler's "Fatal Python error: ..." (the process crashed) and its current thread."""
    if "Fatal Python error" not in src.text:
        return
    fatal: tuple[int, str] | None = None
    first: tuple[str, int] | None = None  # the first thread printed after it (no "Current")
    every = list(lines(src))
    for k, (no, line) in enumerate(every):
        s = line.strip()
        if fatal is None and _FATAL.match(s) is not None:
            fatal, first = (no, s), None
            continue
        if fatal is None:
            continue
        if (c := _CURRENT.match(s)) is not None:
            thread = c.group(1) if c.group(1) != "Stack" else None  # (no thread id printed)
            yield from _fatal(src, fatal, thread, _frames_after(every, k + 1),
                              _native_after(every, k), _after_terminate(every, fatal[0]))
            fatal = None
        elif first is None and (t := _THREAD.match(s)) is not None:
            first = (t.group(1), k + 1)
    if fatal is None:
        return
    handling = _handling_exception(every, fatal[0])
    if handling is not None:  # a thread was formatting an exception when the process aborted
        yield _aborted_after_exception(src, fatal, *handling)
        return
    # no current thread marked: the first one printed crashed
    # (no thread printed at all: a crash handler's C stack may follow the fatal line itself)
    thread, at = first if first is not None else (None, fatal[0])
    yield from _fatal(src, fatal, thread,
                      _frames_after(every, at) if first else mangled_frames(every, at),
                      _native_after(every, at), _after_terminate(every, fatal[0]))


#: frames of code that formats or prints an exception it caught (traceback module, SGLang's
#: get_exception_traceback, exceptiongroup's formatter)
_EXC_HANDLING = ("format_exception", "get_exception_traceback", "print_exc", "format_exc",
                 "print_exception")
_THREAD_BOOT = ("run", "_bootstrap", "_bootstrap_inner")


def _handling_exception(every: list[tuple[int, str]], fatal_no: int
                        ) -> tuple[str, list[tuple[str, str]]] | None:
    """The thread faulthandler printed (no thread marked current) whose frames are formatting
    a caught exception, as ``(thread label, frames)``: the thread that hit a failure."""
    for k, (no, line) in enumerate(every):
        if no <= fatal_no or (t := _THREAD.match(line.strip())) is None:
            continue
        frames = _frames_after(every, k + 1)
        if any(fn.split(".")[-1] in _EXC_HANDLING for _f, fn in frames):
            outer = next((fn for f, fn in reversed(frames) if fn not in _THREAD_BOOT
                          and "threading.py" not in f), None)
            return (f"{t.group(1)} ({outer})" if outer else t.group(1)), frames
    return None


def _aborted_after_exception(src: Source, fatal: tuple[int, str], thread: str,
                             frames: list[tuple[str, str]]) -> Clue:
    """The process aborted while one of its threads handled an exception it caught: the abort
    follows from that exception (whose message the dump does not hold), the thread is where
    to look."""
    funcs = [fn for _line, fn in frames]
    role = frames_role(funcs) or src.role
    return Clue(key="PYTHON_FATAL", label="consequence", text=fatal[1][:_MAX_TEXT],
                source=src.path, line=fatal[0], role=role, host=src.host, suspect=thread,
                stage=frames_stage(funcs, [], role), wedge=False, strength=1,
                why="faulthandler: the process aborted while this thread was formatting an "
                    "exception it caught; that exception (not in the dump) is what failed")


#: a thread faulthandler printed without marking it current
_THREAD = linear.compile(r"^(Thread 0x[0-9a-fA-F]{1,16}) \(most recent call first\):")
#: a native frame of a crash handler's C stack ('File "<unknown>", line 0, in cuEventQuery')
_NATIVE = linear.compile(r'^\s*File "<unknown>", line 0,? in (.{1,300})$')


def _native_after(every: list[tuple[int, str]], k: int) -> list[tuple[int, str]]:
    """(line number, function) of the native frames (innermost first) of a C stack printed
    within 40 lines after ``k``."""
    out: list[tuple[int, str]] = []
    for no, line in every[k:k + 40]:
        m = _NATIVE.match(line)
        if m is not None:
            out.append((no, m.group(1).strip()))
        elif out and line.strip():
            break
    return out


def _frames_after(every: list[tuple[int, str]], k: int) -> list[tuple[str, str]]:
    """(frame line, function) of the thread whose header is just before index ``k``,
    innermost first (faulthandler prints most recent call first)."""
    out: list[tuple[str, str]] = []
    for _no, line in every[k:k + 200]:
        m = _FRAME.match(line)
        if m is None:
            break
        out.append((line.strip(), m.group(2)))
    return out


#: functions of the collectives layer: a crash in one is on the collective side
#: SGLang's own collective steps (sglang 0.5.23: DP attention's batch-size sync across DP
#: ranks, the request broadcast across TP ranks)
_SYNC_FUNCS = ("prepare_mlp_sync_batch", "broadcast_pyobj", "_broadcast_reqs_across_ranks",
               "poll_and_all_reduce")
_COLLECTIVE_FUNCS = ("ncclCommInitRank", "nccl", "init_process_group", "all_reduce",
                     "all_gather", "broadcast", "barrier", "TCPStore", "rendezvous")


#: C++'s std::terminate on an uncaught exception, and the exception's message on the next line
_TERMINATE = "terminate called after throwing an instance of"
_WHAT = linear.compile(r"^\s*what\(\):\s+(.{1,800})$")
_TERMINATE_NEAR = 4  # the what() line follows its terminate line this closely


@reader("cpp_terminate")
def terminate_clues(src: Source) -> Iterator[Clue]:
    """An uncaught C++ exception (torch's, gloo's, NCCL's): its ``what():`` message is the
    cause, the terminate line (and the abort it raises) the consequence."""
    if _TERMINATE not in src.text or src.kind in ("metrics", "server_info", "load"):
        return
    found = lines_with(src.text, (_TERMINATE, "what():"))  # (only these lines are read)
    for k, (no, line) in enumerate(found):
        if _TERMINATE not in line:
            continue
        yield Clue(key="CPP_TERMINATE", label="consequence", text=line.strip()[:_MAX_TEXT],
                   source=src.path, line=no, time=_stamp(line), role=src.role, host=src.host,
                   rank=parse_rank(line), wedge=False, strength=1,
                   why="C++ std::terminate: an exception no code caught ended the process "
                       "(it aborts)")
        what = next(((n, ln, m.group(1)) for n, ln in found[k + 1:k + 2]
                     if n - no <= _TERMINATE_NEAR and (m := _WHAT.match(ln)) is not None), None)
        if what is not None:
            yield Clue(key="CPP_EXCEPTION", label="cause", text=what[1].strip()[:_MAX_TEXT],
                       source=src.path, line=what[0], time=_stamp(line), role=src.role,
                       host=src.host, rank=parse_rank(line), side=_side(what[2], src.role),
                       wedge=False, strength=3,
                       why="the message of the C++ exception nothing caught: what failed")


def _after_terminate(every: list[tuple[int, str]], no: int) -> bool:
    """The lines just before line ``no`` (a "Fatal Python error: Aborted") hold a terminate
    line: the abort std::terminate raised, not a crash of its own."""
    k = no - 1  # (``every`` holds every line, numbered from 1)
    return any(_TERMINATE in line for _n, line in every[max(0, k - _TERMINATE_NEAR - 4):k])


def _fatal(src: Source, fatal: tuple[int, str], thread: str | None,
           frames: list[tuple[str, str]], native: list[tuple[int, str]], after_terminate: bool
           ) -> Iterator[Clue]:
    """The crash, placed by the crashing thread's innermost frames; its text names the
    innermost frame (where it crashed). A native stack printed with it (a crash handler's)
    that runs the transfer engine's or NCCL's code names that side."""
    funcs = [fn for _line, fn in frames]
    role = frames_role(funcs) or src.role
    side: Side | None = "collective" if any(w in fn for fn in funcs[:3]
                                            for w in _COLLECTIVE_FUNCS) else None
    side = side_of_words(" ".join(fn for _no, fn in native)) or side  # whose code it ran
    where = f" (crashed at: {frames[0][0]})" if frames else ""
    # (after std::terminate, the C++ exception's message says what failed, not the C stack)
    crash = None if after_terminate else _native_crash(src, fatal, native, side, role, funcs)
    if crash is not None:  # the C stack says where it crashed: the fatal error follows from it
        yield crash
        yield Clue(key="PYTHON_FATAL", label="consequence", text=(fatal[1] + where)[:_MAX_TEXT],
                   source=src.path, line=fatal[0], role=role, host=src.host, side=crash.side,
                   stage=crash.stage, wedge=False, strength=2,
                   why="the interpreter died of the fault its C stack shows")
        return
    if "Aborted" in fatal[1] and after_terminate:
        yield Clue(key="PYTHON_FATAL", label="consequence", text=(fatal[1] + where)[:_MAX_TEXT],
                   source=src.path, line=fatal[0], role=role, host=src.host, suspect=thread,
                   stage=frames_stage(funcs, [], role), side=side, wedge=False, strength=1,
                   why="the abort std::terminate raised for the C++ exception just before")
        return
    yield Clue(key="PYTHON_FATAL", label="cause", text=(fatal[1] + where)[:_MAX_TEXT],
               source=src.path, line=fatal[0], role=role, host=src.host, suspect=thread,
               stage=frames_stage(funcs, [], role), side=side, wedge=False, strength=3,
               why="faulthandler: the interpreter crashed; the current thread is the one that "
                   "crashed, its innermost frame where")


#: frames of the signal's own delivery and of crash handlers, above the frame that faulted
_SIGNAL_FRAMES = ("pthread_kill", "gsignal", "raise", "abort", "__restore_rt", "killpg",
                  "__GI_raise", "__GI_abort", "__pthread_kill", "_sigtramp", "FatalSignalHandler")
#: where a thread's native stack ends (its start routine is the frame before)
_THREAD_START = ("__clone", "clone3", "start_thread", "0xffffffffffffffff")
_CRASH_FRAMES = 4  # frames from the faulting one shown as the cause


def _native_crash(src: Source, fatal: tuple[int, str], native: list[tuple[int, str]],
                  side: Side | None, role: str | None, funcs: list[str]) -> Clue | None:
    """The faulting frames of a crash handler's C stack (``File "<unknown>", line 0, in X``,
    innermost first) past the signal's delivery frames: the cause, on the side whose code
    they run; the thread's start routine (the frame before ``__clone``, else the outermost one
    printed) the suspect."""
    if not native or not _SIGNAL_NAMES.search(fatal[1]):
        return None
    at = next((i for i, (_no, fn) in enumerate(native)
               if not any(w in fn for w in _SIGNAL_FRAMES) and not fn.startswith("0x")), None)
    if at is None:
        return None
    body = [fn for _no, fn in native[at:] if not fn.startswith(_THREAD_START)]
    entry = body[-1] if len(body) > 1 else None  # the outermost frame the stack shows
    text = " | ".join(f'File "<unknown>", line 0, in {fn}' for fn in body[:_CRASH_FRAMES])
    stage: Stage | None = frames_stage(funcs, [], role)
    if stage is None and side == "transfer_engine":  # the transfer engine's one job on the path
        stage = "decode_transfer_wait" if role == "decode" else "kv_send"
    return Clue(key="NATIVE_CRASH", label="cause", text=text[:_MAX_TEXT], source=src.path,
                line=native[at][0], role=role, host=src.host, side=side, stage=stage, suspect=entry,
                wedge=False, strength=3,
                why=f"the C stack of the crash: it faulted in {body[0]}"
                    + (f", in the thread running {entry}" if entry else ""))


_SIGNAL_NAMES = linear.compile(r"Segmentation fault|Bus error|Aborted|Floating point exception|"
                               r"Illegal instruction")
