"""The GPU, the host and the transfer engine beneath SGLang -> clues: the kernel log, Mooncake
/ NIXL / UCX errors, native stacks (gdb, UCX), the debugger that printed nothing, py-spy top
and load documents.

Kernel: an Xid is a cause on the GPU it names (its class from NVIDIA's catalog), except the
ones that follow another (45, 154; 109 after an earlier Xid of the same GPU), which are
consequences; an uncorrected PCIe AER error before a GPU falls off the bus is that loss's
cause; nvidia-smi failing to reach a GPU that did not fall off means work on it hangs. Nothing
here is a wedge of requests by itself except that (a GPU present but not answering).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from pdforensics.analysis.pdpath.model import Clue, Side, Stage
from pdforensics.analysis.pdpath.place import side_of_words
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.beneath import read_beneath
from pdforensics.parsers.kernel_log import (
    AER,
    AMD_GPU_FAULT,
    AMD_GPU_REPORT,
    DRIVER_FAILED,
    GPU_IN_RESET,
    GPU_INIT_REPORT,
    GPU_LOST,
    GPU_RESET_REQUIRED,
    GSP,
    HUNG_TASK,
    OOM_INVOKED,
    OOM_KILL,
    OOM_REAPED,
    OOM_UNIT_FAILED,
    SMI_UNREACHABLE,
    XID,
    KernelEvent,
)
from pdforensics.parsers.load_json import read_load_doc
from pdforensics.parsers.native_stacks import (
    looks_like_gdb,
    looks_like_ucx_backtrace,
    parse_gdb,
    parse_ucx_backtrace,
)
from pdforensics.parsers.pyspy_top import looks_like_pyspy_top, parse_pyspy_top
from pdforensics.parsers.transfer_engine import (
    TransferError,
    device_of,
    only_device,
    transfer_context,
)
from pdforensics.parsers.xid_table import classify

_FOLLOWS = frozenset({45, 154})
_AFTER_ANOTHER = frozenset({109, 43})
_LOST = (GPU_LOST, SMI_UNREACHABLE)


def _lost_after(events: list[KernelEvent], i: int) -> KernelEvent | None:
    return next((e for e in events[i + 1:] if e.kind == GPU_LOST or (e.kind == XID and e.xid == 79)),
                None)


def _xid_clue(src: Source, e: KernelEvent, seen: set[str | None], aer_before: bool) -> Clue:
    assert e.xid is not None
    c = classify(e.xid)
    follows = e.xid in _FOLLOWS or (e.xid in _AFTER_ANOTHER and e.device in seen) or (
        e.xid == 79 and aer_before)
    label = "consequence" if follows else "cause"
    strength = {"critical": 3, "warning": 2, "info": 1}[c.severity]
    return Clue(key=f"GPU_XID_{e.xid}", label=label, text=e.text[:500], source=src.path,  # type: ignore[arg-type]
                line=e.lineno, time=e.epoch, host=src.host, side="gpu", suspect=e.suspect,
                wedge=False, strength=strength,
                why=f"Xid {e.xid} ({c.mnemonic}): {c.meaning}" + (
                    " -- it follows an earlier error" if follows else ""))


def _kernel_clues(src: Source, events: list[KernelEvent]) -> Iterator[Clue]:
    seen: set[str | None] = set()
    lost = {e.device for e in events if e.kind == GPU_LOST or (e.kind == XID and e.xid == 79)}
    fatal_aer = False
    faulted: set[str | None] = set()  # devices (NIC) and drivers (AMD, NVIDIA) failed once
    alone = not any(x.kind == OOM_KILL for x in events)  # no OOM victim line (cut before it)
    for i, e in enumerate(events):
        base = dict(source=src.path, line=e.lineno, time=e.epoch, host=src.host)
        if e.kind == XID and e.xid is not None:
            yield _xid_clue(src, e, seen, fatal_aer)
            seen.add(e.device)
        elif e.kind == GPU_LOST:
            yield Clue(key="GPU_LOST", label="consequence" if fatal_aer else "cause",
                       text=e.text[:500], side="gpu", suspect=e.suspect, wedge=False,
                       strength=3, why="the GPU no longer answers on PCIe", **base)  # type: ignore[arg-type]
        elif e.kind == GPU_INIT_REPORT:
            yield Clue(key="GPU_INIT_REPORT", label="consequence", text=e.text[:500], side="gpu",
                       suspect=e.suspect, wedge=False, strength=1,
                       why="the driver's report that it could not set the GPU up (after "
                           "RmInitAdapter failed): what failed is that line", **base)  # type: ignore[arg-type]
        elif e.kind == AER:
            fatal = bool(e.severity) and not str(e.severity).startswith("Corrected")
            gone = _lost_after(events, i)
            fatal_aer = fatal_aer or (fatal and gone is not None)
            yield Clue(key="PCIE_AER", label="cause", text=e.text[:500], side="gpu",
                       suspect=gone.suspect if gone is not None and fatal else None,
                       wedge=False if gone is not None else None, strength=3 if fatal else 2,
                       why=f"PCIe AER {e.severity} on {e.device}", **base)  # type: ignore[arg-type]
        elif e.kind == SMI_UNREACHABLE:
            yield Clue(key="GPU_UNREACHABLE", label="consequence", text=e.text[:500], side="gpu",
                       suspect=e.suspect, wedge=None if e.device in lost else True, strength=2,
                       why="nvidia-smi cannot reach the GPU: work on it no longer completes",
                       **base)  # type: ignore[arg-type]
        elif e.kind == DRIVER_FAILED:
            yield _first_of("NIC_DRIVER_FAILED", e, e.device not in faulted, "host",
                            f"the {e.process} driver failed on its device", base)
            faulted.add(e.device)
        elif e.kind in (AMD_GPU_FAULT, AMD_GPU_REPORT):
            fault = e.kind == AMD_GPU_FAULT
            yield _first_of("AMD_GPU_ERROR", e, fault and "amd" not in faulted, "gpu",
                            "AMD's GPU driver reports a hardware fault on the device", base)
            faulted.update(("amd",) if fault else ())
        elif e.kind in (GPU_RESET_REQUIRED, GPU_IN_RESET):
            fault = e.kind == GPU_RESET_REQUIRED
            yield _first_of("GPU_RESET_REQUIRED", e, fault and "nv" not in faulted, "gpu",
                            "NVIDIA's driver: the GPU needs a reset (its checks fail while it is "
                            "reset)", base)
            faulted.update(("nv",) if fault else ())
        elif (host := _host_clue(e, base, alone)) is not None:
            yield host
        elif e.kind == GSP:
            # a GSP line names no device; the Xid the driver raises for it just after does
            xid = next((x for x in events[i + 1:] if x.kind == XID and x.lineno - e.lineno <= 20),
                       None)
            yield Clue(key="GSP_RPC", label="cause", text=e.text[:1000], side="gpu",
                       suspect=e.suspect or (xid.suspect if xid is not None else None), strength=2,
                       why="the GPU System Processor stopped answering (Xid 119 family)", **base)  # type: ignore[arg-type]


def _first_of(key: str, e: KernelEvent, first: bool, side: Side, why: str,
              base: dict[str, object]) -> Clue:
    """A driver's first failure is the cause; what it reports after it, its consequences."""
    return Clue(key=key, label="cause" if first else "consequence", text=e.text[:500], side=side,
                suspect=e.suspect, wedge=False, strength=3 if first else 1,
                why=why + ("" if first else ": after its first failure, what followed from it"),
                **base)  # type: ignore[arg-type]


def _host_clue(e: KernelEvent, base: dict[str, object], alone: bool) -> Clue | None:
    """The host's memory and tasks: the OOM killer's events, a task hung in the kernel
    (``alone``: no victim line, the report cut before it)."""
    if e.kind == OOM_REAPED:
        return Clue(key="OOM_REAPED", label="consequence", text=e.text[:500], side="host",
                    suspect=e.suspect, wedge=False, strength=1,
                    why="the kernel freed the memory of the process its OOM killer killed",
                    **base)  # type: ignore[arg-type]
    if e.kind == OOM_INVOKED:  # (the cause itself where no victim line follows: cut)
        return Clue(key="OOM_INVOKED", label="cause" if alone else "consequence",
                    text=e.text[:500], side="host", wedge=False, strength=2 if alone else 1,
                    suspect=e.process if alone else None,
                    why="this process asked for memory when none was left and so set the OOM "
                        "killer off: the host's memory was exhausted (it is the trigger, not "
                        "necessarily what used the memory)", **base)  # type: ignore[arg-type]
    if e.kind == HUNG_TASK:
        return Clue(key="HUNG_TASK", label="consequence", text=e.text[:500], side="host",
                    suspect=f"{e.process}:{e.pid}", wedge=True, strength=1,
                    why="the kernel's hung-task detector: this task has been stuck in the "
                        "kernel (uninterruptible sleep) that long; what it waits on (a "
                        "driver, a disk) is the cause", **base)  # type: ignore[arg-type]
    if e.kind == OOM_UNIT_FAILED:
        return Clue(key="OOM_UNIT_FAILED", label="consequence", text=e.text[:500], side="host",
                    suspect=e.suspect, wedge=False, strength=1,
                    why="systemd marked the unit failed because the OOM killer killed a "
                        "process of it", **base)  # type: ignore[arg-type]
    if e.kind == OOM_KILL:
        return Clue(key="OOM_KILL", label="cause", text=e.text[:500], side="host",
                    suspect=e.suspect, wedge=False, strength=3,
                    why="the OOM killer (the kernel's, or Ray's memory monitor) killed this "
                        "process", **base)  # type: ignore[arg-type]
    return None


def _refused_peer(e: TransferError) -> str | None:
    """The peer a connection was refused by or could not reach: where to look."""
    low = e.text.lower()
    return e.peer if e.peer and ("refused" in low or "unreachable" in low
                                 or "failed to connect" in low or "connect timeout" in low
                                 ) else None


def _transfer_clues(src: Source, b: object) -> Iterator[Clue]:
    from pdforensics.parsers.beneath import Beneath

    assert isinstance(b, Beneath)
    device = only_device(src.text) if b.transfer else None
    for e in b.transfer:
        stage: Stage | None = e.stage  # type: ignore[assignment]
        if stage == "kv_send" and src.role == "decode":
            stage = "decode_transfer_wait"
        yield Clue(key=f"TRANSFER_{e.kind.upper()}", label=e.label,  # type: ignore[arg-type]
                   text=e.text[:500], source=src.path, line=e.lineno, host=src.host, role=src.role,
                   stage=stage, side="transfer_engine", wedge=False,
                   suspect=(device_of(e.text) or _refused_peer(e) or device)
                   if e.label == "cause" else None,
                   strength=3 if e.label == "cause" else 1,
                   why=f"{e.engine}: {e.detail}" + (f" (peer {e.peer})" if e.peer else ""))


@reader("beneath_host")
def beneath_host(src: Source) -> Iterator[Clue]:
    """The kernel log and the transfer engine: each event on its side (gpu, host,
    transfer_engine) and, for transfer errors, the PD stage it breaks."""
    if not src.text or src.kind in ("metrics", "goroutines", "server_info", "load"):
        return
    b = read_beneath(src.text)
    if b.kernel:
        events = list(b.kernel)
        clues = list(_kernel_clues(src, events))
        if not any(c.label == "cause" for c in clues):  # only follow-ons: not on the PD path
            clues = [Clue(**{**c.__dict__, "stage": "not_applicable"}) for c in clues]
        yield from clues
    yield from _transfer_clues(src, b)
    context = transfer_context(src.text) if not b.transfer else None
    if context is not None:
        yield Clue(key={"startup": "TRANSFER_ENGINE_STARTUP", "metadata_ok": "TRANSFER_METADATA_OK",
                        "ucx_info": "UCX_TRANSPORT_INFO"}[context], label="noise", source=src.path,
                   host=src.host, role=src.role, wedge=False,
                   text=f"transfer engine: {context.replace('_', ' ')}, no error",
                   why="the transfer engine's own lines, none of them a failure")
    if b.debugger_no_stack is not None:
        yield Clue(key="DEBUGGER_NO_STACK", label="noise", source=src.path,
                   line=b.debugger_no_stack, host=src.host,
                   text="gdb started but printed no stack: the process was not read",
                   why="a debugger banner with no thread after it")


_WAITS_ON_PEER = ("recv", "recvfrom", "recvmsg", "poll", "epoll_wait", "select", "accept")
_WAITS_ON_LOCK = ("sem_wait", "futex", "pthread_cond", "acquire", "__enter__", "lock")
_SLEEPS = ("sleep", "nanosleep", "clock_nanosleep")
_IDLE_LOOPS = ("serve_forever", "run_forever", "_run_once", "event_loop", "handle_request")
_NCCL = ("nccl", "cudaStreamSynchronize", "cuStreamSynchronize")


def _leaf_kind(functions: list[str], code: str) -> str:
    low = [f.lower() for f in functions[:12]]
    if any(any(n.lower() in f.lower() for n in _NCCL) for f in functions):
        return "collective"
    if _store_frame(functions) is not None:
        return "store"
    if any(f.lstrip("_").startswith(("libc_recv", "recv", "sock_recv")) for f in low) or ".recv(" in code:
        return "peer"
    if any(any(s in f for s in _SLEEPS) for f in low[:3]):
        return "sleep"
    if any(any(s.lower() in f for s in _IDLE_LOOPS) for f in low):
        return "idle"
    if any(any(w in f for w in _WAITS_ON_LOCK) for f in low[:6]):
        return "lock"
    return "other"


@reader("native_stacks")
def native_stacks(src: Source) -> Iterator[Clue]:
    """gdb / UCX native stacks: a thread waiting in NCCL or a CUDA sync is a collective that
    waits; a thread blocked receiving from a peer is upstream of threads waiting on its
    process's locks (they are consequences); sleepers are noise."""
    dumps = [d for d in src.dumps if d.kind == "gdb"]
    if not dumps and src.text and src.kind in ("stacks", "log", None):
        if looks_like_gdb(src.text):
            dumps = list(parse_gdb(src.text))
        elif looks_like_ucx_backtrace(src.text):
            dumps = list(parse_ucx_backtrace(src.text))
    frame_lines: list[str] | None = None  # gdb's "#N ..." lines, split once when a thread throws
    throws = 0
    for d in dumps:
        for t in d.threads:
            fns = [f.function for f in t.frames]
            at = next((i for i, fn in enumerate(fns[:12]) if any(w in fn for w in _THROWS)), None)
            if at is not None:
                if frame_lines is None:
                    frame_lines = [s for s in (ln.strip() for ln in src.text.split("\n"))
                                   if s.startswith("#")]
                throws += 1  # (past a few throwing threads, their frames are named, not quoted)
                yield from _throw_clues(src, t.thread_id, fns, at,
                                        frame_lines if throws <= _QUOTED_THROWS else [])
                continue
            kind = _leaf_kind(fns, _code_after(src.text, t.frames[0].line if t.frames else None))
            engine = next((f for f in fns[:3] if f.startswith(_ENGINE_FRAMES)), None)
            if kind == "other" and engine is not None and len(d.threads) == 1 \
                    and "Caught signal" not in src.text:  # (UCX's report: read_signals/_transfer)
                yield _engine_thread(src, t.thread_id, fns, engine)
                continue
            yield _native_clue(src, t.thread_id, t.name, fns, kind)


#: a transfer engine's own code in a native frame (Mooncake's C++, NIXL's, UCX's)
_ENGINE_FRAMES = ("mooncake::", "nixl", "ucp_", "uct_")  # (ucs_: UCX's own error handler too)


def _engine_thread(src: Source, thread: str, fns: list[str], engine: str) -> Clue:
    """The one thread a backtrace shows runs in a transfer engine's code (or a libc call it
    made): where the process was stopped, a crash's or a debugger's; a weak cause."""
    head = thread if thread not in ("", "?") else "the thread"
    quoted = next((ln.strip() for ln in src.text.split("\n", 400)[:400]
                   if ln.lstrip().startswith("#") and engine in ln), None)  # gdb's frame line
    text = f"{head}: {quoted} (innermost: {fns[0]})" if quoted else \
        f"{head}: {' <- '.join(fns[:4])}"
    return Clue(key="NATIVE_THREAD_TRANSFER", label="cause",
                text=text[:500], source=src.path, host=src.host,
                role=src.role, side="transfer_engine", suspect=engine, strength=1,
                why="the one thread of the backtrace runs in the transfer engine's code: where "
                    "the process stopped (a crash, or the debugger)")


#: torch.distributed's key-value store (the rendezvous every rank meets at as it starts)
_STORE = ("c10d::TCPStore::", "c10d::PrefixStore::", "c10d::tcputil::")


def _store_frame(functions: list[str]) -> str | None:
    """The first frame of a c10d store call a stack waits in (``TCPStore::doGet``), if any."""
    return next((f for f in functions[:16] if f.startswith(_STORE) and "tcputil" not in f), None)


_WHY_NATIVE = {"collective": "waits in NCCL or a CUDA sync: its peers have not joined",
               "peer": "blocked receiving from a peer that does not send",
               "store": "waits for a key in torch.distributed's store (the rendezvous ranks "
                        "meet at as they start): the rank or store server that should have "
                        "written it is where to look",
               "lock": "waits on a lock another thread of the process holds",
               "idle": "a server loop waiting for its next request"}


def _native_clue(src: Source, thread: str, name: str | None, fns: list[str], kind: str) -> Clue:
    """One native thread by what it waits in (``kind`` from `_leaf_kind`)."""
    label = {"collective": "cause", "peer": "cause", "store": "consequence",
             "lock": "consequence"}.get(kind, "noise")
    named = thread not in ("", "?")  # (a backtrace pasted without its thread header)
    head = " ".join(x for x in (thread if named else "", name or "") if x) or "the thread"
    text = f"{head}: {' <- '.join(fns[:4])}"
    if kind == "store":
        text += f" ... in {_store_frame(fns)}"
    return Clue(key=f"NATIVE_THREAD_{kind.upper()}", label=label,  # type: ignore[arg-type]
                text=text[:500], source=src.path, host=src.host, role=src.role,
                side="collective" if kind in ("collective", "store") else None,
                stage="startup" if kind == "store" else None,
                suspect=thread if kind == "peer" and named else None,
                wedge=True if kind in ("collective", "peer", "lock", "store") else (
                    False if kind == "idle" else None),
                strength=2 if label == "cause" else 1,
                why=_WHY_NATIVE.get(kind, "no wait that matters"))


#: the functions a C++ exception is thrown and unwound through
_THROWS = ("__cxa_throw", "do_throw_error", "throw_exception", "__throw_", "_Unwind_RaiseException")
#: library namespaces between a throw and the code that called into the library
_LIBRARY = ("std::", "asio::", "boost::", "__gnu_cxx::", "fmt::", "__cxx")


_QUOTED_THROWS = 8


def _throw_clues(src: Source, thread: str, fns: list[str], at: int,
                 frame_lines: list[str]) -> Iterator[Clue]:
    """A thread throwing a C++ exception (``fns[at]`` a throw helper among its innermost
    frames): the throw and the first frame of the code that called into the throwing library
    are the cause (that frame's function the suspect, the side its words name); a fault inside
    the unwinding before it is its consequence. Their gdb lines are quoted from
    ``frame_lines``."""
    caller = next((fn for fn in fns[at + 1:at + 12] if "::" in fn and not fn.startswith(_LIBRARY)),
                  None)
    raw = _gdb_lines(frame_lines, (fns[at], *(fns[:1] if at else ()), *((caller,) if caller else ())))
    base = {"source": src.path, "host": src.host, "role": src.role, "wedge": False}
    yield Clue(key="NATIVE_THROW", label="cause", strength=2,
               text=" | ".join(raw[fn] for fn in (fns[at], caller) if fn in raw)[:500]
               or f"{thread}: {fns[at]}", suspect=caller,
               side=side_of_words(f"{fns[at]} {caller or ''}"),
               why=f"the thread throws a C++ exception in {fns[at]}"
                   + (f", called from {caller}" if caller else ""), **base)  # type: ignore[arg-type]
    if at and fns[0] in raw:
        yield Clue(key="NATIVE_THROW_UNWIND", label="consequence", strength=1, text=raw[fns[0]],
                   why="the thread faulted while unwinding that exception", **base)  # type: ignore[arg-type]


def _gdb_lines(frame_lines: list[str], fns: tuple[str, ...]) -> dict[str, str]:
    """The first gdb frame line ("#3  0x... in f (...)") naming each function."""
    out: dict[str, str] = {}
    for s in frame_lines:
        for fn in fns:
            if fn not in out and f" {fn} (" in s:
                out[fn] = s
        if len(out) == len(fns):
            break
    return out


def _code_after(text: str, line: int | None) -> str:
    """py-bt prints a frame's source line under it: the call the thread is in."""
    if line is None or "File \"" not in text:
        return ""
    marker = f", line {line}, in "
    at = text.find(marker)
    return text[at:at + 300].split("\n", 2)[1] if at >= 0 and text.count("\n", at) >= 1 else ""


@reader("pyspy_top")
def pyspy_top(src: Source) -> Iterator[Clue]:
    """py-spy top: every thread idle, or where the CPU goes."""
    if not looks_like_pyspy_top(src.text):
        return
    top = parse_pyspy_top(src.text)
    if top is None:
        return
    if top.idle:
        yield Clue(key="PYSPY_TOP_IDLE", label="consequence", source=src.path, host=src.host,
                   text=f"py-spy top: {top.threads} thread(s), Active {top.active_pct}%, GIL "
                        f"{top.gil_pct}%: no thread ran", wedge=True, strength=1,
                   why="every thread waits (py-spy top over its samples)")
    elif top.hottest is not None:
        yield Clue(key="PYSPY_TOP_BUSY", label="progress", source=src.path, host=src.host,
                   text=f"py-spy top: Active {top.active_pct}%, hottest {top.hottest.function} "
                        f"{top.hottest.own_pct}%", wedge=False, strength=1,
                   why="threads ran during the samples")


@reader("load_documents")
def load_documents(src: Source) -> Iterator[Clue]:
    """/v1/loads, /get_load(s), /workers, /model_info: context, and a snapshot that stopped
    with work in it."""
    doc_json = src.json
    if doc_json is None and src.kind == "load" and src.text.lstrip()[:1] in ("{", "["):
        try:
            doc_json = json.loads(src.text)
        except (ValueError, RecursionError):
            return
    doc = read_load_doc(doc_json) if doc_json is not None else None
    if doc is None:
        return
    role = doc.role or src.role
    if doc.kind in ("router_loads", "router_workers"):
        role = "router"
    stale = doc.stale()
    yield Clue(key="LOAD_SNAPSHOT_STALE" if stale else "LOAD_DOCUMENT",
               label="cause" if stale else "noise", source=src.path, host=src.host, role=role,
               side=role if role in ("prefill", "decode", "router") else None,  # type: ignore[arg-type]
               text=f"{doc.kind}: " + "; ".join(doc.notes)[:400], wedge=True if stale else False,
               strength=2 if stale else 1,
               why="a load snapshot the scheduler stopped publishing with work in it" if stale
               else "a load document: context, and how it misleads")
