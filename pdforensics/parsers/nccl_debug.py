"""NCCL's own debug lines (``NCCL_DEBUG=WARN|INFO``): what failed, and what followed from it.

A line reads ``host:pid:tid [dev] [file.cc:123] NCCL WARN|INFO message`` (any log prefix
before it: a pdsh ``10.0.0.1: ``, a compose service). The warnings that name a failure are
causes: an InfiniBand work completion with an error (``NET/IB : Got completion from peer ...
with error 4`` / ``status=12 ... vendor err 129``), a verbs call that failed (``Call to
ibv_create_qp failed``: connection set-up, so the collective never started), a collective
mismatch. The ``file.cc:N -> 6 [Proxy Thread]`` lines that follow carry the error code up
the stack to a thread: one chain, read as its last line, each of its steps a consequence. ``Abort COMPLETE`` is a
communicator torn down after an error. INFO lines of a healthy start (rings, trees,
channels, ``Init COMPLETE``) are context only. Never raises on arbitrary text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.linescan import has_any, marks

LITERAL = "NCCL "
_LITERAL_MARK = marks(LITERAL)

#: (NCCL before 2.3 printed the level without its name: "host:1:2 [0] INFO ...",
#: "host:1:2 [0] include/socket.h:360 WARN Call to connect failed")
_LINE = linear.compile(r"(?:^|[\s:\]])([\w.-]{1,200}):(\d{1,10}):(\d{1,10}) \[(\d{1,4})\] "
                   r"(?:([\w./-]{1,300}:\d{1,7}) )?(?:NCCL )?(WARN|INFO|TRACE|ABORT) ?(.*)$")
#: a step of an error chain: "misc/socket.cc:621 -> 2", with the thread it reached
#: ("group.cc:64 -> 2 [Async thread]") or the errno's words ("socket.cc:505 -> 2 (Operation
#: now in progress)")
_CHAIN = linear.compile(r"^(?:NCCL INFO )?([\w./-]{1,300}:\d{1,7}) -> (\d{1,4})"
                        r"(?: \[([^\]]{1,40})\]| \([^)\n]{1,120}\))?\s*$")
#: the old format's lines hold one of these, and no "NCCL " before the level
_OLD_MARKS = marks("] INFO ", " WARN ")
_NEW_MARKS = marks("NCCL INFO", "NCCL WARN")
_IB_COMPLETION = linear.compile(r"NET/IB ?: Got completion from peer (\S{1,120}) with (?:error (\d{1,5})|"
                            r"status=(\d{1,5}|IBV_WC_\w{1,40}))")  # (newer: the status's name)
_IBV_FAILED = linear.compile(r"Call to (ibv_\w{1,60}) failed")
#: NCCL's set-up finding two ranks on one GPU: "Duplicate GPU detected : rank 0 and rank 1 both
#: on CUDA device e3000" (the device, in the peer's place: the one thing to look at)
_DUPLICATE_GPU = linear.compile(r"Duplicate GPU detected : rank \d{1,6} and rank \d{1,6} both on "
                                r"CUDA device (\w{1,20})")
#: a socket NCCL could not connect (socketStartConnect, ncclSocketConnect), or read from or
#: write to (socketProgressOpt: the peer went away): that peer
_CONNECT_FAILED = linear.compile(r"(?:[Cc]onnect to|[Cc]all to (?:recv|send) (?:from|to)) (\S{1,120}) "
                                 r"failed")
_BOOTSTRAP_MSG = ("Bootstrap", "cudaDriverVersion", "NET/IB : Using", "NET/Socket : Using",
                  "Using network", "Plugin Path", "P2P plugin", "NET/Plugin")
_SETUP_CALLS = ("ibv_create", "ibv_reg", "ibv_open", "ibv_query", "ibv_modify_qp", "ibv_alloc",
                "ibv_get_device", "ibv_fork_init")

#: classes of NCCL lines, with their label for the reasoning
IB_COMPLETION = "ib_completion_error"
IBV_CALL = "ibv_call_failed"
MISMATCH = "collective_mismatch"
WARN = "warn"
ERROR_CHAIN = "error_chain"  # the end of a "file:line -> code [Thread]" chain
ABORT = "comm_abort"
PEER_CLOSED = "peer_closed"
INIT = "init"  # healthy start-up lines (context)
HARMLESS = "harmless"  # a WARN NCCL prints on a healthy machine (no InfiniBand: sockets used)

#: WARN messages of a machine without InfiniBand: NCCL falls back to its socket transport
_HARMLESS_WARNS = ("Failed to open libibverbs", "NET/IB : No device found",
                   "Could not find: libnccl-net")


@dataclass(frozen=True)
class NcclLine:
    """One NCCL debug line that matters (or the end of one error chain)."""

    lineno: int
    text: str  # the line as found (its outer log prefix kept)
    kind: str
    host: str
    pid: int
    dev: int  # the local device index in brackets
    level: str  # WARN | INFO | TRACE | ABORT
    message: str  # after "NCCL WARN " / "NCCL INFO "
    code: int | None = None  # ncclResult of an error chain (2 system, 3 internal, 5, 6 remote)
    call: str | None = None  # the verbs call that failed
    peer: str | None = None  # the peer an IB completion error names
    steps: tuple[tuple[int, str], ...] = ()  # an error chain's lines (number, text), in order
    setup: bool = False  # the failure is in connection set-up (stage: start-up)


#: NCCL's kernels need more shared memory than the GPU gives a kernel (NCCL older than the
#: GPU: 2.25 on Blackwell); init fails with it. Printed as INFO by some versions, WARN by others
_SHARED_MEM = "exceeds device/fn maxSharedMem"


def _classify(level: str, msg: str) -> tuple[str | None, dict[str, str]]:
    extra: dict[str, str] = {}
    if _SHARED_MEM in msg:
        return WARN, extra
    if level == "WARN" or level == "ABORT":
        if (m := _IB_COMPLETION.search(msg)) is not None:
            extra["peer"] = m.group(1)
            return IB_COMPLETION, extra
        if (m := _IBV_FAILED.search(msg)) is not None:
            extra["call"] = m.group(1)
            extra["setup"] = "yes" if m.group(1).startswith(_SETUP_CALLS) else ""
            return IBV_CALL, extra
        if msg.startswith(_HARMLESS_WARNS):
            return HARMLESS, extra
        if "ismatch" in msg:
            return MISMATCH, extra
        if "closed by remote peer" in msg or "reset by peer" in msg or "Connection closed" in msg:
            return PEER_CLOSED, extra
        if (m := _CONNECT_FAILED.search(msg)) is not None:
            extra["peer"] = m.group(1)
        elif (m := _DUPLICATE_GPU.search(msg)) is not None:  # two ranks given one GPU
            extra["peer"] = f"CUDA device {m.group(1)}"
        return WARN, extra
    if "Abort COMPLETE" in msg:
        return ABORT, extra
    if ("Init COMPLETE" in msg or "Connected all" in msg or msg.startswith(("Channel ", "NVLS ", "Ring ",
                                                                             "threadThresholds"))
            or msg.startswith(_BOOTSTRAP_MSG) or "coll channels" in msg):
        return INIT, extra
    return None, extra


def read_nccl_lines(text: str) -> tuple[NcclLine, ...]:
    """The NCCL lines of ``text`` that matter, in file order; each error chain ends in one
    ERROR_CHAIN line (its last ``-> code`` line)."""
    if not has_any(text, _LITERAL_MARK):
        return ()
    old = not has_any(text, _NEW_MARKS) and has_any(text, _OLD_MARKS)
    out: list[NcclLine] = []
    chains: dict[tuple[str, int, str], NcclLine] = {}  # open chain per (host, pid, tid)
    for no, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if "NCCL " not in line and not (old and ("] INFO " in line or " WARN " in line)):
            continue
        m = _LINE.search(line)
        if m is None:
            continue
        host, pid, tid, dev, src, level, msg = m.groups()
        key = (host, int(pid), tid)
        body = f"{src} {msg}" if src else msg
        cm = _CHAIN.match(body.strip())
        if cm is not None and level == "INFO":
            code = int(cm.group(2))
            before = chains[key].steps if key in chains else ()
            chains[key] = NcclLine(no, line, ERROR_CHAIN, host, int(pid), int(dev), level,
                                   msg.strip(), code=code, steps=(*before, (no, line)))
            if cm.group(3):  # the chain reached a thread: it ends here
                out.append(chains.pop(key))
            continue
        if key in chains:  # a chain broken off by another line of the same thread
            out.append(chains.pop(key))
        kind, extra = _classify(level, msg)
        if kind is None:
            continue
        out.append(NcclLine(no, line, kind, host, int(pid), int(dev), level, msg.strip(),
                            call=extra.get("call"), peer=extra.get("peer"),
                            setup=bool(extra.get("setup"))))
    out.extend(chains.values())
    return tuple(sorted(out, key=lambda x: x.lineno))



def init_phase(lines: tuple[NcclLine, ...]) -> str | None:
    """``bootstrap`` when the NCCL lines stop in communicator bootstrap (nothing connected
    yet), ``set_up`` when they show communicators set up, None without init lines."""
    init = [n for n in lines if n.kind == INIT]
    if not init and not lines:
        return None
    return "set_up" if any(not n.message.startswith(_BOOTSTRAP_MSG) for n in init) else (
        "bootstrap" if init else None)
