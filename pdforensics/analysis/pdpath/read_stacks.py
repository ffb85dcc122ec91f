"""Stack dumps -> clues: which SGLang process (role), and what its threads do.

From sglang's source (0.5.23 managers/scheduler.py): a scheduler reaches
``Scheduler.maybe_sleep_on_idle`` only when ``is_fully_idle()``, i.e. no request in any of
its queues, PD transfer queues included: a scheduler sleeping there holds no request. A main
thread active under ``run_batch`` / ``forward_batch_generation`` is a forward in progress.
A detokenizer (or tokenizer) waiting in its zmq receive holds no request either.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue, Stage
from pdforensics.analysis.pdpath.place import frames_role, frames_stage
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.frames import ProcessDump, ThreadStack

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


def _dump_clues(src: Source, d: ProcessDump, n: int) -> Iterator[Clue]:
    role = _role(d, src)
    where = f"{d.command or 'process'} pid {d.pid}" if d.pid is not None else (d.command or f"dump {n}")
    if _is_sglang(d):
        yield Clue(key="SGLANG_SERVER", label="noise", text=f"{where}: an SGLang process",
                   source=src.path, role=role, host=src.host, rank=d.rank,
                   why="its title, command line or frames are SGLang's")
    main = _main(d)
    if main is None:
        return
    funcs = _funcs(main)
    in_forward = any(any(k in f for k in _FORWARD) for f in funcs)
    stage: Stage | None = ("decode_forward" if role == "decode" else
                           "prefill_forward" if role == "prefill" else None)
    if in_forward and _in_collective(main):
        # a forward waiting in a collective: for its peers (a rank behind, stopped or gone);
        # what it waits for is on another rank, not in this stack
        yield Clue(key="STACK_FORWARD_IN_COLLECTIVE", label="consequence", stage=stage,
                   side="collective", role=role,
                   text=f"{where}: {main.name or main.thread_id} waits in {funcs[0]} inside "
                        "a forward", source=src.path, host=src.host, rank=d.rank, strength=1,
                   why="the forward's collective returns only when every rank of the group "
                       "joins it: this rank waits for its peers")
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
    where = f"{d.command or 'process'} pid {d.pid}" if d.pid is not None else (d.command or f"dump {n}")
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
    """Another program's main thread (the dump shows little else) waits in a collective: its
    rank waits for its peers, the collective is the side to look at, the peer that did not
    join is not in this stack."""
    where = f"{d.command or 'process'} pid {d.pid}" if d.pid is not None else (d.command or f"dump {n}")
    return Clue(key="STACK_WAITS_IN_COLLECTIVE", label="consequence", side="collective",
                text=f"{where}: {main.name or main.thread_id} waits in {main.frames[0]}",
                source=src.path, host=src.host, rank=d.rank, strength=1,
                why="a collective returns only when every rank of its group joins it: this "
                    "rank waits for a peer; one dump cannot tell a hang from a slow peer")


#: functions of a program starting up (warm-up, compilation, model load)
_STARTING = ("warm_up", "warmup", "compile_or_warm_up", "load_model", "_initialize_kv_caches")


@reader("stack_dumps")
def stack_clues(src: Source) -> Iterator[Clue]:
    """Per dumped SGLang process: its role, a forward in progress, or a fully idle loop; per
    dump of another program, the one thread that runs."""
    for n, d in enumerate(src.dumps, 1):
        if not d.threads:
            continue
        said = list(_dump_clues(src, d, n))
        yield from said
        if said or _is_sglang(d):
            continue
        main = _main(d)
        if main is not None and len(d.threads) <= 2 and _in_collective(main):
            yield _collective_wait(src, d, n, main)
        elif (focus := _focus_clue(src, d, n)) is not None:
            yield focus


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
