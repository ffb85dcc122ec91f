"""SGLang server logs -> clues: every log signature line placed on the request path, with the
label SGLang's own code gives the message (catalog/log_spec.py, from its source), and the
lines around a failure that tell cause from consequence (a traceback's exception line, the
launcher's SIGQUIT, a bare ``Killed``, "from another rank").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Label, Side, Stage
from pdforensics.analysis.pdpath.place import (
    KEY_PLACE,
    NOISE_KEYS,
    Place,
    batch_role,
    bootstrap_suspect,
    frames_stage,
    role_of_line,
    sglang_role,
    side_of_words,
)
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.analysis.pdpath.traceback_lines import CARET, EXC_LINE, FRAME
from pdforensics.parsers.eval_summary import EVAL_DONE, EVAL_SUMMARY
from pdforensics.parsers.journal import (
    SGLANG_MARKS,
    SignatureLine,
    parse_log_timestamp,
    parse_rank,
    signature_lines,
)
from pdforensics.parsers.linescan import first_line_with, has_any, lines_with, marks, split_lines
from pdforensics.parsers.log_trends import counts_busy, req_fields
from pdforensics.parsers.logtime import NewestStamp
from pdforensics.parsers.requests import parse_request_lines
from pdforensics.parsers.settings import in_setting_name

_ROOM = linear.compile(r"bootstrap_room=(-?\d{1,40})|Request (-?\d{1,40}) timed out")
_MAX_ROOM = 2**64  # rooms are uint64 (bundle/schema.py's room): a longer number is not one
_RID = linear.compile(r"""(?:^|[^\w.])(?:req\.)?rid=['"]?([\w.:-]{1,200})""")
_RUNNING = linear.compile(r"#(?:running|queue)-req: (\d{1,9})")
_MAX_TEXT = 500
_NOT_LOGS = ("metrics", "server_info", "load", "goroutines")


def ids(line: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The rids and bootstrap rooms a line names."""
    head = line[:4000]
    rids = tuple(dict.fromkeys(m.group(1) for m in _RID.finditer(head)
                               if m.group(1) not in ("None", "none"))) if "rid=" in head else ()
    if "bootstrap_room=" not in head and "timed out" not in head:
        return rids, ()  # (neither pattern can match: most lines, read without a search)
    numbers = (int(m.group(1) or m.group(2)) for m in _ROOM.finditer(head))
    rooms = tuple(dict.fromkeys(n for n in numbers if -_MAX_ROOM < n < _MAX_ROOM))
    return rids, rooms


def _place(hit: SignatureLine) -> tuple[str, Place | None]:
    """The strongest placed key of the line, masked causes included (an abort line still says
    which failure it aborted)."""
    placed = [(s.key, KEY_PLACE[s.key]) for s in (*hit.matched, *hit.masked)
              if s.key in KEY_PLACE and KEY_PLACE[s.key].stage is not None]
    if not placed:
        return "", None
    return max(placed, key=lambda kp: kp[1].strength)


def _running(line: str) -> bool:
    """Whether a batch line counts a running or queued request: a ``#running-req: N`` or
    ``#queue-req: N`` with N > 0 (of its first 9 digits, as _RUNNING reads it)."""
    return counts_busy(req_fields(line))


def _batch_clue(src: Source, hit: SignatureLine, role: str | None) -> Clue:
    line = hit.line
    low = line.lower()
    busy = hit.batch.busy if hit.batch is not None else _running(line)
    kind = "decode" if "decode batch" in low else "prefill"
    stage: Stage = "decode_forward" if kind == "decode" else "prefill_forward"
    return Clue(key="BATCH_STATS", label="progress", text=line[:_MAX_TEXT], source=src.path,
                line=hit.no, time=hit.time, stage=stage if busy else None,
                role=batch_role(line) or role, host=src.host, rank=hit.rank,
                strength=2 if busy else 1,
                why=f"sglang's periodic {kind} batch line" + (" with running requests" if busy
                                                              else ""))


def _relayed(src: Source, hit: SignatureLine, rids: tuple[str, ...],
             rooms: tuple[int, ...]) -> Clue:
    """The router passing on a worker's error answer ("Decode server returned error status
    ... 500"): a consequence of whatever failed on that worker, never its cause."""
    low = hit.line.lower()
    worker = "decode" if "decode server" in low else "prefill" if "prefill server" in low else None
    return Clue(key="ROUTER_RELAYED_ERROR", label="consequence", text=hit.line[:_MAX_TEXT],
                source=src.path, line=hit.no, time=hit.time, stage="stream_back",
                side=worker, role="router", host=src.host, rids=rids, rooms=rooms, strength=2,  # type: ignore[arg-type]
                why="smg relays the error status a worker answered: that worker's failure, "
                    "seen from the router")


def _watchdog_dump(line: str) -> bool:
    """The state dump of SGLang's watchdog ("Scheduler debug info:", srt/utils/watchdog.py
    WatchdogRaw._watchdog_once; "self.cur_batch.batch_size()=", 0.4 Scheduler.watchdog_thread),
    not the tokenizer's dump of requests before a crash."""
    return "debug info:" in line or "cur_batch" in line


def _watchdog_place(role: str | None) -> Place:
    stage: Stage | None = {"prefill": "prefill_forward", "decode": "decode_forward"}.get(role or "")  # type: ignore[assignment]
    return Place(stage, None, True, 2, "sglang srt/utils/watchdog.py: the watchdog dumps the "
                 "scheduler's state when a batch has run past --watchdog-timeout (a forward that "
                 "does not return)")


_CALLS = linear.compile(r"([A-Za-z_]\w{0,100})\(")


@dataclass(frozen=True)
class _Traceback:
    """What the frames after a scheduler's "hit an exception" say: the stage they run
    through, and (when another line cuts the traceback before its exception line) the
    innermost frame line and its number, where it raised."""

    stage: Stage | None
    cut_frame: tuple[int, str] | None


def _traceback(every: Sequence[str], no: int, role: str | None) -> _Traceback:
    """The traceback that opens at line ``no`` (a scheduler dying in Scheduler.__init__ ->
    init_torch_distributed is at start-up), read even when it is cut before its exception
    line."""
    funcs: list[str] = []
    code: list[str] = []
    last_code = ""
    last_frame: tuple[int, str] | None = None
    ended_by_exception = False
    ended = False  # something after the traceback: not cut by the end of the text
    for k, nxt in enumerate(every[no:no + 120], no + 1):
        m = FRAME.match(nxt)
        if m is not None:
            funcs.insert(0, m.group(2))  # innermost first
            last_frame, last_code = (k, nxt.strip()), ""
        elif nxt.strip() and not nxt[:1].isspace():
            ended_by_exception = EXC_LINE.match(nxt.strip()) is not None
            ended = True
            break
        elif nxt.strip() and not CARET.match(nxt):
            last_code = nxt.strip()
            code.insert(0, last_code)
    # the innermost frame's code line calls into the next frame (the one a cut dropped)
    funcs[:0] = [c for c in _CALLS.findall(last_code)][::-1]
    stage = frames_stage(funcs, code, role) if funcs else None
    # cut by the end of the text: the traceback reader names that frame (read_python)
    cut = ended and not ended_by_exception or no + 120 < len(every)
    return _Traceback(stage, last_frame if cut and not ended_by_exception else None)


def _cut_frame_clue(src: Source, tb: _Traceback, hit: SignatureLine, role: str | None) -> Clue:
    assert tb.cut_frame is not None
    no, frame = tb.cut_frame
    return Clue(key="PYTHON_TRACEBACK_CUT", label="cause", text=frame[:_MAX_TEXT],
                source=src.path, line=no, time=hit.time, stage=tb.stage, role=role,
                host=src.host, rank=hit.rank, wedge=False, strength=2,
                why="the scheduler's traceback is cut before its exception line: its innermost "
                    "frame is where it raised")


def _continued(every: Sequence[str], no: int) -> str:
    """The reason an exception record gives on the indented lines after line ``no``
    ("with exception KVTransferError(bootstrap_room=N):" then "  follow_bootstrap_room
    conflict: ..."): at most two lines, up to a blank or unindented one."""
    out: list[str] = []
    for nxt in every[no:no + 2]:
        if not nxt.strip() or not nxt[:1].isspace():
            break
        out.append(nxt.strip())
    return " ".join(out)


#: a generic signature -> the specific ones that read its line better ("Decode out of memory
#: happened. #retracted_reqs" is the KV pool retracting requests, not a GPU out-of-memory)
_EXPLAINED_BY: dict[str, frozenset[str]] = {"OUT_OF_MEMORY": frozenset({"KV_POOL_FULL"})}


@reader("sglang_signatures")
def signature_clues(src: Source) -> Iterator[Clue]:
    """Lines of SGLang's catalogued messages (and the software inside a PD server)."""
    if not src.text or src.kind in _NOT_LOGS:
        return
    every: Sequence[str] = ()  # the text's lines, split only when a record continues
    for hit in signature_lines(src.text):
        line = hit.line
        if line.rstrip().endswith("):") and "KVTransferError(" in line:
            every = every or split_lines(src.text)
            line = line.rstrip() + " " + _continued(every, hit.no)
        if len(hit.matched) == 1 and hit.matched[0].key == "BATCH_STATS":
            yield _batch_clue(src, hit, src.role)  # the periodic line: nothing else to read
            continue
        rids, rooms = ids(line)
        keys = {sig.key for sig in hit.matched}
        for sig in hit.matched:
            if keys & _EXPLAINED_BY.get(sig.key, frozenset()):
                continue  # a generic word of a line a specific message reads
            if sig.key == "BATCH_STATS":
                yield _batch_clue(src, hit, src.role)
                continue
            # the line's own role, else the one role whose code prints it (sglang's source)
            line_role = role_of_line(line) or (sig.roles[0] if len(sig.roles) == 1 else src.role)
            if "returned error status" in line:
                yield _relayed(src, hit, rids, rooms)
                continue
            place = KEY_PLACE.get(sig.key)
            if sig.key == "SCHEDULER_DEBUG_DUMP" and _watchdog_dump(line):
                place = _watchdog_place(line_role)
            label: Label = "noise" if sig.key in NOISE_KEYS else sig.kind
            if place is None or (label == "consequence" and place.stage is None):
                via, place = _place(hit) if label == "consequence" else ("", place)
                if place is not None and via:
                    place = Place(place.stage, place.side, False, 1,
                                  f"{sig.description}: it ends a {via} ({place.why})")
            stage = place.stage if place else None
            if sig.key == "SCHEDULER_EXCEPTION" and line.rstrip().endswith(
                    "(most recent call last):"):
                every = every or split_lines(src.text)
                tb = _traceback(every, hit.no, line_role)
                stage = stage or tb.stage
                if tb.cut_frame is not None:
                    yield _cut_frame_clue(src, tb, hit, line_role)
            yield Clue(key=sig.key, label=label, text=line[:_MAX_TEXT], source=src.path,
                       line=hit.no, time=hit.time, stage=stage,
                       side=_line_side(sig.key, line, place), role=line_role, host=src.host,
                       rank=hit.rank or _torch_rank(sig.key, line), rids=rids, rooms=rooms,
                       suspect=bootstrap_suspect(line) if sig.key == "BOOTSTRAP_INFO_FAILED"
                       else None,
                       wedge=place.wedge if place else None,
                       strength=place.strength if place else 1,
                       why=(place.why if place else sig.description)
                       + (f"; label from {sig.label_why}" if sig.label_why.startswith("sglang")
                          else ""))


def _line_side(key: str, line: str, place: Place | None) -> Side | None:
    """A CUDA error raised by a collective's own code (custom all-reduce, NCCL) is the
    collective's; an illegal memory access is a kernel of the server writing out of bounds; a
    CUDA error NCCL's watchdog thread met when it checked its work is the process's CUDA
    context failing (a sticky error any call sees): which kernel or device is not said."""
    if key == "CUDA_ERROR" and "watchdog thread terminated" in line:
        return NOT_ESTABLISHED
    if key == "CUDA_ERROR" and side_of_words(line) == "collective":
        return "collective"
    if key == "CUDA_ERROR" and "illegal memory access" in line.lower():
        return None
    return place.side if place else None


_TORCH_RANK = linear.compile(r"^\[(rank\d{1,7})\]:|[\[ ](Rank \d{1,7})\]")


def _torch_rank(key: str, line: str) -> str | None:
    """The rank torch's line names, as printed ("[rank6]:[E1113 ...", "[Rank 7] NCCL watchdog
    thread terminated with exception: CUDA error ..."), for a CUDA error: the rank whose GPU
    failed."""
    m = _TORCH_RANK.search(line) if key == "CUDA_ERROR" else None
    return (m.group(1) or m.group(2)) if m is not None else None


_CONTEXT: tuple[tuple[str, Label, tuple[str, ...], Stage | None, bool | None, int, str], ...] = (
    # (key, label, literals, stage, wedge, strength, why)
    # the launcher's own words: "Received sigquit from a child process" (engine.py, 0.4-0.5.23),
    # "SIGQUIT received. signum=..." (tokenizer_manager.py, 0.5.23) -- not a server_args line
    # naming custom_sigquit_handler, not the crash line that announces the SIGQUIT
    ("LAUNCHER_SIGQUIT", "consequence", ("received sigquit", "sigquit received"), None, False, 2,
     "sglang's launcher kills the server when a child process dies (SIGQUIT from the child)"),
    ("SERVER_READY", "progress", ("the server is fired up and ready to roll",), "startup", False, 1,
     "sglang http_server: the warm-up request finished"),
    ("WARMUP", "progress", ("warmup",), "startup", False, 1,
     "sglang's warm-up request at start (a fake KV transfer in PD mode)"),
    # model_runner's steps while the server starts (0.4-0.5.23: "Load weight begin. avail
    # mem=...", "Memory pool end. ...", cuda_graph_setup's "Capture ... CUDA graph begin.")
    # (and the progress bars of the weight load and the CUDA graph capture)
    ("STARTUP_PHASE", "progress", ("load weight begin", "load weight end", "memory pool end",
                                   "cuda graph begin", "init torch distributed begin",
                                   "loading safetensors checkpoint shards", "capturing batches ("),
     "startup", False, 1, "a step of sglang's model runner while the server starts"),
    # sglang-router's (0.1-0.2, Rust) first lines: "🚧 Initializing router on HOST:PORT",
    # "🚧 Initializing workers on [...]" (src/server.rs)
    ("ROUTER_STARTUP_PHASE", "progress", ("initializing router on", "initializing workers on"),
     "startup", False, 1, "a step of the router while it starts"),
    # sglang 0.1's controller reporting its start failed (manager_single.py: "Initialization
    # failed. router_init_state: <traceback>"): the traceback or error before it says what
    ("SERVER_INIT_FAILED", "consequence", ("initialization failed. router_init_state",),
     "startup", False, 2, "the server reports its start-up failed, with the failure's traceback"),
    # torch at a process's exit: the process that shared CUDA tensors is gone (CudaIPCTypes),
    # the NCCL process group was never destroyed -- the program ends after whatever failed
    ("PROCESS_EXIT_WARNING", "consequence",
     ("producer process has been terminated before all shared cuda tensors released",
      "process group has not been destroyed before we destruct processgroupnccl"),
     None, False, 1, "torch's warning as a process exits: an end that follows a failure, not "
                     "the failure"),
)
#: lines whose context words are another program's: nccl-tests' header ("warmup iters: 5")
_NOT_CONTEXT = ("warmup iters",)
#: a stack frame line (py-spy's "    func (file.py:12)", a traceback's '  File "x.py", line')
_STACK_FRAME = linear.compile(r'^\s+(?:[\w.<>-]{1,200} \([^()\n]{1,400}:\d{1,7}\)\s*$|File ")')
_KILLED = linear.compile(r"^\s*(?:\S+:\s*)?Killed\s*$")
#: the shell's report of a process a signal ended ("Segmentation fault (core dumped)")
_SHELL_CRASH = linear.compile(r"^\s*(?:\S+:\s*)?(?:Segmentation fault|Aborted|Bus error|Illegal "
                              r"instruction|Floating point exception)(?: \(core dumped\))?\s*$")
def _sglang_mark(low_line: str) -> bool:
    return any(m in low_line for m in SGLANG_MARKS)


#: what a line must hold (lower case) for context_clues to read anything in it but the first
#: SGLang mark (found on its own: an access log names /generate on every line)
_CONTEXT_MARKS = (*(lit for c in _CONTEXT for lit in c[2]), "killed", "disaggregation",
                  "segmentation fault", "(core dumped)")


def _stamp(line: str) -> float | None:
    """The line's own time, where its first characters can open one."""
    return parse_log_timestamp(line) if line[:1] in "[0123456789" or "|" in line[:40] else None


@reader("sglang_context")
def context_clues(src: Source) -> Iterator[Clue]:
    """Lines that place other evidence: "from another rank", the launcher's SIGQUIT, a bare
    ``Killed``, warm-up and readiness, the server's PD role, SGLang's own endpoints, and the
    last time the log shows (how long it ran on after its last batch).

    Only the lines holding one of _CONTEXT_MARKS are read (one scan of the text finds them);
    a line's time is that of the newest stamped line at or before it."""
    if not src.text or src.kind in _NOT_LOGS:
        return
    all_lines = split_lines(src.text)
    role_seen = marked = False
    time_at = NewestStamp(all_lines, _stamp).at

    read = lines_with(src.text, _CONTEXT_MARKS, ignore_case=True)
    first_mark = first_line_with(src.text, SGLANG_MARKS, ignore_case=True)
    if first_mark is not None and first_mark not in read:
        read = sorted([*read, first_mark])
    for no, raw in read:
        line = raw.rstrip("\r")
        ll = line.lower()
        if not role_seen and (r := sglang_role(line)) is not None:
            role_seen = True
            yield Clue(key="SERVER_ROLE", label="noise", text=line[:_MAX_TEXT], source=src.path,
                       line=no, role=r, host=src.host, why="the server's --disaggregation-mode")
        if not marked and _sglang_mark(ll):
            marked = True
            yield Clue(key="SGLANG_SERVER", label="noise", text=line[:_MAX_TEXT],
                       source=src.path, line=no, time=time_at(no - 1), host=src.host,
                       why="a line only an SGLang server writes (its endpoints, titles, paths)")
        hit = [c for c in _CONTEXT if any(lit in ll and not in_setting_name(ll, lit)
                                          for lit in c[2])
               ] if _STACK_FRAME.match(line) is None and not any(
                   w in ll for w in _NOT_CONTEXT) else []  # a frame names, it does not say
        if hit:
            for key, label, _lit, stage, wedge, strength, why in hit[:1]:
                yield Clue(key=key, label=label, text=line[:_MAX_TEXT], source=src.path,
                           line=no, time=time_at(no - 1), stage=stage,
                           role=role_of_line(line) or src.role, host=src.host,
                           rank=parse_rank(line), wedge=wedge, strength=strength, why=why)
        elif _KILLED.match(line) is not None:
            yield Clue(key="PROCESS_KILLED", label="consequence", text=line.strip(),
                       source=src.path, line=no, time=time_at(no - 1), host=src.host,
                       wedge=False, strength=2, why="the shell reports the process was killed "
                                                    "(SIGKILL): what ended it, not why it hung")
        elif _SHELL_CRASH.match(line) is not None:
            yield Clue(key="PROCESS_SIGNALLED", label="consequence", text=line.strip(),
                       source=src.path, line=no, time=time_at(no - 1), host=src.host,
                       wedge=False, strength=2, why="the shell reports the signal that ended the "
                                                    "process: how it ended, not why")
    last = next(((i + 1, t) for i in range(len(all_lines) - 1, -1, -1)
                 if (t := _stamp(all_lines[i].rstrip("\r"))) is not None), None)
    if last is not None:
        yield Clue(key="LOG_END", label="noise", text=f"the log's last time stamp (line {last[0]})",
                   source=src.path, line=last[0], time=last[1], role=src.role, host=src.host,
                   why="where the evidence of this log ends")


@reader("request_lines")
def request_clues(src: Source) -> Iterator[Clue]:
    """--log-requests lines (Receive/Finish) and the router's request lines: progress, joined
    to the failures by rid and bootstrap room."""
    if "Receive: obj=" not in src.text and "Finish: obj=" not in src.text \
            and "processing request" not in src.text:
        return
    for ev in parse_request_lines(src.text).events:
        if ev.event not in ("received", "finished", "router_start", "router_finish"):
            continue  # failure lines are read as signatures
        stage: Stage = "router_dispatch" if ev.event.startswith("router") else "stream_back"
        if ev.event == "received":
            stage = "prefill_bootstrap" if src.role == "prefill" else "decode_prealloc"
        yield Clue(key=f"REQUEST_{ev.event.upper()}", label="progress", text=ev.text,
                   source=src.path, line=ev.line_no, time=ev.at, stage=stage, role=src.role,
                   host=src.host, rank=ev.rank, rids=(ev.rid,) if ev.rid else (),
                   rooms=(ev.room,) if ev.room is not None else (),
                   why="a request-level log line (--log-requests / the router's span)")


_BENCH_MARKS = marks("Serving Benchmark Result")
_BENCH_OK = linear.compile(r"^Successful requests:\s+(\d{1,9})\s*$")


_EVAL_MARKS = marks("Accuracy: ")


@reader("bench_accuracy")
def eval_result(src: Source) -> Iterator[Clue]:
    """SGLang's accuracy benchmarks (benchmark/gsm8k ... bench_sglang.py): a summary printed
    is a run that finished, every question answered (its accuracy is the model's, not a
    failure the log shows)."""
    if not has_any(src.text, _EVAL_MARKS) or EVAL_SUMMARY.search(src.text[:1_000_000]) is None:
        return
    for no, line in lines_with(src.text, ("Accuracy: ",))[:_MAX_EVALS]:
        m = EVAL_DONE.match(line.strip())
        if m is not None:
            yield Clue(key="BENCH_EVAL_DONE", label="progress", text=line.strip(),
                       source=src.path, line=no, host=src.host, wedge=False, strength=2,
                       why="an SGLang accuracy benchmark printed its summary: the run finished, "
                           "the server answered every question")


_MAX_EVALS = 10


@reader("bench_serving")
def bench_result(src: Source) -> Iterator[Clue]:
    """sglang.bench_serving's summary: requests that completed are work that moved."""
    if not has_any(src.text, _BENCH_MARKS):
        return
    found = first_line_with(src.text, ("Successful requests:",))
    if found is None or (m := _BENCH_OK.match(found[1].strip())) is None or int(m.group(1)) == 0:
        return
    yield Clue(key="BENCH_REQUESTS_DONE", label="progress", text=found[1].strip(),
               source=src.path, line=found[0], host=src.host, wedge=False, strength=2,
               why="sglang.bench_serving counted these requests as completed")
