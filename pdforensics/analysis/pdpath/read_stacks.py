"""Stack dumps -> clues: which SGLang process (role), and what its threads do.

From sglang's source (0.5.23 managers/scheduler.py): a scheduler reaches
``Scheduler.maybe_sleep_on_idle`` only when ``is_fully_idle()``, i.e. no request in any of
its queues, PD transfer queues included: a scheduler sleeping there holds no request. A main
thread active under ``run_batch`` / ``forward_batch_generation`` is a forward in progress.
A detokenizer (or tokenizer) waiting in its zmq receive holds no request either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue, Stage
from pdforensics.analysis.pdpath.place import frames_role, frames_stage
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.frames import ProcessDump, ThreadStack

#: the rank a pasted stack's title names ("TP0 stuck forever in", "while TP1-3 ... waiting in")
_TITLE_RANK = linear.compile(r"\b((?:DP|TP|PP|EP)\d{1,4}(?:-\d{1,4})?)\b")
_MODE = linear.compile(r"--disaggregation-mode[ =](prefill|decode)")
_FORWARD = ("run_batch", "forward_batch_generation", "ModelRunner.forward", "_forward_raw")
_IDLE = ("maybe_sleep_on_idle", "IdleSleeper.maybe_sleep")
#: a collective's own frames (torch.distributed, SGLang's group coordinator)
_COLLECTIVE = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier", "all_to_all",
               "send", "recv")
_COLLECTIVE_FILES = ("torch/distributed/", "parallel_state.py", "communication_op.py")
_WAIT_FOR_WORK = ("DetokenizerManager.event_loop", "TokenizerManager.handle_loop")
_SGLANG_FILES = ("scheduler.py", "detokenizer_manager.py", "tokenizer_manager.py",
                 "http_server.py", "sglang/")


def _where(d: ProcessDump, n: int) -> str:
    """How a clue names the dumped process: its command and pid, else the dump's number."""
    return f"{d.command or 'process'} pid {d.pid}" if d.pid is not None else (d.command or f"dump {n}")


def _funcs(t: ThreadStack) -> list[str]:
    return [f.function for f in t.frames]


def _is_sglang(d: ProcessDump) -> bool:
    return "sglang" in d.command or any(
        any(s in f.file for s in _SGLANG_FILES) for t in d.threads for f in t.frames[:40])


def _role(d: ProcessDump, src: Source) -> str | None:
    m = _MODE.search(d.command) or _MODE.search(d.parent_command)
    if m is not None:
        return m.group(1)
    return frames_role([f for t in d.threads for f in _funcs(t)]) or src.role


def _main(d: ProcessDump) -> ThreadStack | None:
    return next((t for t in d.threads if t.name == "MainThread"), d.threads[0] if d.threads else None)


def _in_collective(t: ThreadStack) -> bool:
    """The innermost Python frames are a collective's (torch.distributed, SGLang's group
    coordinator)."""
    for f in t.frames[:4]:
        if any(k in f.file for k in _COLLECTIVE_FILES):
            return any(f.function.split(".")[-1].startswith(c) for c in _COLLECTIVE) or (
                "torch/distributed/" in f.file)
    return False


def _waits(held: bool | None) -> bool | None:
    """A thread waiting (in a collective, for the GPU) is held when the dump was taken: a
    wedge, unless the dump says otherwise (the reasoning drops the vote where its role shows
    progress: reason._MOMENTARY)."""
    return True if held is None else held


def _dump_clues(src: Source, d: ProcessDump, n: int) -> Iterator[Clue]:
    role = _role(d, src)
    where = _where(d, n)
    if _is_sglang(d):
        yield Clue(key="SGLANG_SERVER", label="noise", text=f"{where}: an SGLang process",
                   source=src.path, role=role, host=src.host, rank=d.rank,
                   why="its title, command line or frames are SGLang's")
    main = _main(d)
    if main is None:
        return
    funcs = _funcs(main)
    in_forward = any(any(k in f for k in _FORWARD) for f in funcs)
    stage: Stage | None = _batch_stage(funcs) or (
        "decode_forward" if role == "decode" else "prefill_forward" if role == "prefill" else None)
    # a dump SGLang's watchdog printed: that scheduler's batch made no progress for
    # --watchdog-timeout, so a main thread held inside a batch is held, not passing through
    held = True if _WATCHDOG_DUMP in src.text and _is_sglang(d) else None
    if any(f.split(".")[-1] in _AWAITS_FORWARD_THREAD for f in funcs[:8]):
        yield from _awaits_forward_thread(src, d, main, where, role, stage, held)
    elif in_forward and _in_collective(main):
        # a forward waiting in a collective: for its peers (a rank behind, stopped or gone);
        # what it waits for is on another rank, not in this stack
        yield Clue(key="STACK_FORWARD_IN_COLLECTIVE", label="consequence", stage=stage,
                   side="collective", role=role,
                   text=f"{where}: {main.name or main.thread_id} waits in {funcs[0]} inside "
                        "a forward", source=src.path, host=src.host, rank=d.rank, strength=1,
                   why="the forward's collective returns only when every rank of the group "
                       "joins it: this rank waits for its peers", wedge=_waits(held))
    elif _is_sglang(d) and _in_collective(main):
        # outside a forward: the request broadcast at the top of the scheduler's loop, a
        # pipeline stage's send to the next one; the rank that does not join is elsewhere
        yield Clue(key="STACK_WAITS_IN_COLLECTIVE", label="consequence", side="collective",
                   stage=frames_stage(funcs, [], role), role=role,
                   text=f"{where}: {main.name or main.thread_id} waits in {main.frames[0]}"
                        f"{_caller(main)}",
                   source=src.path, host=src.host, rank=d.rank, strength=1, wedge=_waits(held),
                   why="a collective returns only when every rank of its group joins it: this "
                       "rank waits for a peer that is somewhere else")
    elif in_forward and not main.state.startswith("active") and _waits_for_gpu(main):
        # the host thread waits for GPU work it queued (a stream sync, a copy back, .item()):
        # what holds it is that work on the GPU, not in this stack
        yield Clue(key="STACK_FORWARD_WAITS_GPU", label="consequence", stage=stage, role=role,
                   text=f"{where}: {main.name or main.thread_id} waits in "
                        f"{next(f for f in main.frames[:_SYNC_DEPTH] if _is_sync(f.function))} "
                        "inside a forward", source=src.path, host=src.host, rank=d.rank,
                   strength=1, wedge=_waits(held),
                   why="a synchronize returns when the GPU work queued before it completes: "
                       "the forward waits for the GPU")
    elif (driver := _in_cuda_driver(main)) is not None and _is_sglang(d):
        # a driver call that should take milliseconds (a module load, a context), the
        # thread caught inside it: held there when the dump was taken
        own = next((f for f in main.frames if "sglang/" in f.file), None)
        yield Clue(key="STACK_IN_CUDA_DRIVER", label="cause", stage=stage, role=role,
                   text=f"{where}: {main.name or main.thread_id} in {driver}"
                        + (f", called from {own}" if own else ""),
                   source=src.path, host=src.host, rank=d.rank, strength=1,
                   suspect=own.function if own else None, wedge=_waits(held),
                   why="the thread is inside a CUDA driver call that loads code or sets a "
                       "context up (milliseconds, once): it does not return; the SGLang code "
                       "that made it is where to look")
    elif in_forward and (main.state.startswith("active") or main.state == "idle"):
        # py-spy labels a thread idle when it is in native code without the GIL (a kernel, a
        # matmul) or stopped: either way the forward is where the thread is
        yield Clue(key="STACK_ACTIVE_FORWARD", label="progress", stage=stage, role=role,
                   text=f"{where}: {main.name or main.thread_id} "
                        f"{'active' if main.state.startswith('active') else 'in native code'} "
                        f"in a forward ({funcs[0] if funcs else '?'})",
                   source=src.path, host=src.host, rank=d.rank, wedge=False, strength=2,
                   why="py-spy saw the main thread inside a forward batch")
    elif any(any(k in f for k in _IDLE) for f in funcs):
        yield Clue(key="SCHEDULER_FULLY_IDLE", label="noise", role=role, source=src.path,
                   text=f"{where}: the scheduler sleeps in maybe_sleep_on_idle", host=src.host,
                   rank=d.rank, wedge=False,
                   why="sglang scheduler.on_idle sleeps only when is_fully_idle(): no request "
                       "in any queue")
    elif any(any(k in f for k in _WAIT_FOR_WORK) for f in funcs) and main.state == "idle":
        yield Clue(key="WAITING_FOR_WORK", label="noise", role=role, source=src.path,
                   text=f"{where}: {funcs[0] if funcs else '?'} waits for its next message",
                   host=src.host, wedge=False,
                   why="an idle detokenizer/tokenizer loop holds no request")


#: the overlap scheduler's main thread takes each batch's result from its forward thread
#: (sglang 0.4-0.5.2 managers/tp_worker_overlap_thread.py: resolve_batch_result /
#: resolve_last_batch_result block in a queue get until forward_thread_func puts the output)
_AWAITS_FORWARD_THREAD = ("resolve_batch_result", "resolve_last_batch_result")
_FORWARD_THREAD = "forward_thread_func"
#: the header of a py-spy dump SGLang's watchdog prints into its log
#: (utils/cudacore_pyspy_dump_utils.py, called by utils/watchdog.py on a timeout)
_WATCHDOG_DUMP = "Pyspy dump for PID"


#: CUDA calls that block the host until queued GPU work completes (driver, runtime, torch)
_SYNC_CALLS = ("StreamSynchronize", "DeviceSynchronize", "EventSynchronize", "cuMemcpyDtoH",
               "cudaMemcpy", "_local_scalar_dense", "cuCtxSynchronize")
_SYNC_DEPTH = 4  # a synchronize this close to the innermost frame is where the thread waits


#: CUDA driver calls that load code or set a context up: they take milliseconds once, so a
#: thread caught inside one is held there (a kernel launch or a copy is a forward's steady
#: state: caught there, a busy thread is only passing through)
_DRIVER_SETUP = ("cuModuleLoad", "cuLibraryLoad", "cuModuleGetFunction", "cuLibraryGetKernel",
                 "cuCtxCreate", "cuDevicePrimaryCtxRetain", "cuInit")


def _in_cuda_driver(t: ThreadStack) -> str | None:
    """The innermost frame, when it is a CUDA driver call that loads code or sets a context
    up (py-spy --native shows it as ``cuModuleLoadData (libcuda.so.590.48.01)``)."""
    f = t.frames[0] if t.frames else None
    if f is None or "libcuda.so" not in f.file or not f.function.startswith(_DRIVER_SETUP):
        return None
    return str(f)


def _is_sync(function: str) -> bool:
    return any(k in function for k in _SYNC_CALLS)


def _waits_for_gpu(t: ThreadStack) -> bool:
    return any(_is_sync(f.function) for f in t.frames[:_SYNC_DEPTH])


def _batch_stage(funcs: list[str]) -> Stage | None:
    """The stage of the batch whose result a scheduler processes (process_batch_result_*)."""
    for f in funcs:
        if "process_batch_result_prefill" in f:
            return "prefill_forward"
        if "process_batch_result_decode" in f:
            return "decode_forward"
    return None


def _caller(t: ThreadStack) -> str:
    """", called from <the first two frames outside the collective's own code>" (the step
    of SGLang's that issued the collective), or "" when there is none."""
    own = [f for f in t.frames[1:] if not any(k in f.file for k in _COLLECTIVE_FILES)
           and "c10d_logger" not in f.file][:2]
    return f", called from {' < '.join(str(f) for f in own)}" if own else ""


def _awaits_forward_thread(src: Source, d: ProcessDump, main: ThreadStack, where: str,
                           role: str | None, stage: Stage | None,
                           held: bool | None) -> Iterator[Clue]:
    """The main thread waits for the batch its forward thread runs: it is a consequence; the
    forward thread (where the batch is) is the one to look at."""
    waits = next((f for f in main.frames if f.function.split(".")[-1] in _AWAITS_FORWARD_THREAD),
                 main.frames[0])
    yield Clue(key="STACK_AWAITS_FORWARD_THREAD", label="consequence", stage=stage, role=role,
               text=f"{where}: {main.name or main.thread_id} waits in {waits} for the forward "
                    "thread", source=src.path, host=src.host, rank=d.rank, strength=1,
               wedge=held,
               why="the overlap scheduler's main thread blocks in resolve_batch_result until "
                   "the forward thread hands over the batch's output")
    fwd = next((t for t in d.threads if t is not main and (
        _FORWARD_THREAD in (t.name or "") or any(_FORWARD_THREAD in f for f in _funcs(t)))), None)
    if fwd is None or not fwd.frames:
        return
    label = fwd.name if _FORWARD_THREAD in (fwd.name or "") else (
        f"Thread {fwd.thread_id} ({_FORWARD_THREAD})")
    yield Clue(key="STACK_FORWARD_THREAD", label="cause", stage=stage, role=role,
               text=f"{where}: {label} ({fwd.state or 'state not shown'}) in {_own_frame(fwd)}",
               source=src.path, host=src.host, rank=d.rank, suspect=label, strength=1,
               wedge=held,
               why="the forward thread runs the batch the main thread waits for: where the "
                   "batch is when the dump was taken")


#: the dispatch layers a kernel call passes through (torch ops, device-mode hooks): the frame
#: under them is the code that called the kernel
_DISPATCH_FILES = ("torch/_ops.py", "torch/utils/", "torch/nn/modules/module.py",
                   "torch/_contextlib.py")


def _own_frame(t: ThreadStack) -> str:
    """The innermost frame of the thread that is not torch's dispatch plumbing (with the
    innermost one when they differ)."""
    own = next((f for f in t.frames if not any(k in f.file for k in _DISPATCH_FILES)), None)
    if own is None or own is t.frames[0]:
        return str(t.frames[0])
    return f"{own} (innermost: {t.frames[0]})"


def _focus_clue(src: Source, d: ProcessDump, n: int) -> Clue | None:
    """In a dump of another program: the one thread py-spy saw running (or the only thread,
    when its state is not idle) is where the process is; a stuck process is stuck there."""
    if d.kind not in ("pyspy", "pyspy-json"):  # only py-spy says which thread runs
        return None
    active = [t for t in d.threads if t.state.startswith("active")]
    alone = [t for t in d.threads if t.state != "idle"] if len(d.threads) == 1 else []
    focus = active[0] if len(active) == 1 else (alone[0] if alone else None)
    if focus is None or not focus.frames:
        return None
    where = _where(d, n)
    named = focus.thread_id not in ("?", "")
    funcs = _funcs(focus)
    return Clue(key="STACK_ONE_THREAD_RUNS", label="cause", source=src.path, host=src.host,
                text=f"{where}: {'Thread ' + focus.thread_id if named else 'the thread shown'}"
                     f" ({focus.state or 'state not shown'}) in {focus.frames[0]}",
                stage=frames_stage(funcs, [], None) or (
                    "startup" if any(w in f for f in funcs for w in _STARTING) else None),
                suspect=f"Thread {focus.thread_id}" if named else None, strength=1,
                why="the one thread of the process that runs (the others wait or sleep): where "
                    "the process is when the dump was taken; a second dump tells stuck from busy")


def _collective_wait(src: Source, d: ProcessDump, n: int, main: ThreadStack) -> Clue:
    """A thread of another program waits in a collective: its rank waits for its peers, the
    collective is the side to look at, the peer that did not join is not in this stack."""
    where = _where(d, n)
    return Clue(key="STACK_WAITS_IN_COLLECTIVE", label="consequence", side="collective",
                text=f"{where}: {main.name or main.thread_id} waits in {main.frames[0]}"
                     f"{_caller(main)}",
                source=src.path, host=src.host, rank=d.rank, strength=1, wedge=True,
                why="a collective returns only when every rank of its group joins it: this "
                    "rank waits for a peer, held when the dump was taken (a second dump tells a "
                    "hang from a slow peer)")


#: functions of a program starting up (warm-up, compilation, model load)
_STARTING = ("warm_up", "warmup", "compile_or_warm_up", "load_model", "_initialize_kv_caches")


@reader("stack_dumps")
def stack_clues(src: Source) -> Iterator[Clue]:
    """Per dumped SGLang process: its role, a forward in progress, or a fully idle loop; per
    dump of another program, the one thread that runs."""
    for n, d in enumerate(src.dumps, 1):
        if not d.threads:
            continue
        if d.rank is None and (named := _TITLE_RANK.findall(d.threads[0].name or "")):
            # a pasted stack titled "TP0 stuck in:" or "TP1-3 waiting in:"
            d = dataclasses.replace(d, rank=",".join(dict.fromkeys(named)))
        said = list(_dump_clues(src, d, n))
        yield from said
        if said or _is_sglang(d):
            continue
        main = _main(d)
        waiting = [t for t in d.threads if _in_collective(t)]
        if waiting:  # the main thread's wait first, else the first thread's that waits
            yield _collective_wait(src, d, n, main if main in waiting else waiting[0])
        elif main is not None and main.frames and "file_baton" in main.frames[0].file:
            yield _build_lock_wait(src, d, n, main)
        elif (focus := _focus_clue(src, d, n)) is not None:
            yield focus


def _build_lock_wait(src: Source, d: ProcessDump, n: int, t: ThreadStack) -> Clue:
    """torch's FileBaton: the thread waits for the lock file of a C++/CUDA extension build
    that another process holds, or left behind when it died (torch/utils/file_baton.py)."""
    where = _where(d, n)
    name = t.name or f"Thread {t.thread_id}"
    return Clue(key="STACK_WAITS_BUILD_LOCK", label="cause", side="host",
                text=f"{where}: {name} waits in {t.frames[0]}", source=src.path, host=src.host,
                suspect=name, strength=1, wedge=True,
                why="torch's FileBaton waits, polling, until the build lock file in the "
                    "extensions directory is gone: another process is building, or died and "
                    "left the lock behind (remove the stale 'lock' file)")


@reader("pyspy_failure")
def pyspy_failure_clues(src: Source) -> Iterator[Clue]:
    """py-spy could not dump: the failure (why the stacks are missing) is the evidence."""
    if src.kind != "pyspy_error" or not src.text:
        return
    from pdforensics.parsers.pyspy import classify_pyspy_error

    f = classify_pyspy_error(src.text, 1)
    if f is None:
        return
    yield Clue(key="PYSPY_FAILED", label="cause", text=f.message[:500], source=src.path,
               host=src.host, strength=1, why=f"py-spy failed ({f.reason}): {f.fix}")
