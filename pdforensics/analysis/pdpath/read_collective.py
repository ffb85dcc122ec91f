"""Collectives beneath SGLang -> clues: torch's NCCL watchdog (read across the ranks of one
text), NCCL's own lines, NCCL RAS, Flight Recorder dumps and fr_trace reports, cuda-gdb
listings and native (gdb / UCX) stacks.

Labels: every watchdog line is a victim's (consequence); the conclusion across ranks is the
cause -- the rank behind, the rank that never joined, the ranks that disagree, or, when every
rank shows the same, the hung collective itself with no rank named. A stuck watchdog is a cause
unless a collective timeout came first. NCCL's failure warnings are causes (a verbs set-up
failure at start-up), the `-> code [Thread]` chain and `Abort COMPLETE` consequences. RAS: a
missing or straggling minority is named, ranks ahead never.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Stage
from pdforensics.analysis.pdpath.read_engine import ENGINE_MARKS
from pdforensics.analysis.pdpath.read_host_faults import host_fault
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.errors import ParseError
from pdforensics.parsers.cuda_gdb import looks_like_cuda_gdb, parse_cuda_kernels
from pdforensics.parsers.flight_recorder import (
    FrDump,
    dump_from_doc,
    looks_like_fr,
    looks_like_fr_trace,
    parse_fr_bytes,
    parse_fr_trace_text,
    rank_from_name,
)
from pdforensics.parsers.journal import parse_rank
from pdforensics.parsers.linescan import has_any, lines_with, marks
from pdforensics.parsers.nccl_debug import (
    ABORT,
    ERROR_CHAIN,
    HARMLESS,
    IBV_CALL,
    INIT,
    PEER_CLOSED,
    init_phase,
    read_nccl_lines,
)
from pdforensics.parsers.nccl_ras import parse_ras, read_ras
from pdforensics.parsers.nccl_watchdog import HEARTBEAT, STATUS, TAKEDOWN, TIMEOUT, cross_rank, read_watchdog

_WHY_WD = "torch ProcessGroupNCCL watchdog"


def _clue(src: Source, key: str, label: str, text: str, line: int | None = None, **kw: object) -> Clue:
    kw.setdefault("side", "collective")
    return Clue(key=key, label=label, text=text[:500], source=src.path, line=line,  # type: ignore[arg-type]
                host=src.host, role=src.role, **kw)  # type: ignore[arg-type]


@reader("nccl_watchdog")
def nccl_watchdog(src: Source) -> Iterator[Clue]:
    """torch's NCCL watchdog lines: victims as consequences, the cross-rank reading as the
    cause (the rank behind, never joined, a mismatch, or the hung collective unnamed)."""
    if "NCCL" not in src.text and "watchdog" not in src.text:
        return
    recs = read_watchdog(src.text)
    if not recs:
        return
    cr = cross_rank(recs)
    stuck = {r.lineno for r in cr.stuck_watchdogs}
    for r in recs:
        rank = f"Rank {r.rank}" if r.rank else None
        if r.kind == HEARTBEAT and r.lineno in stuck:
            yield _clue(src, "NCCL_WATCHDOG_STUCK", "cause", r.text, r.lineno, rank=rank,
                        suspect=rank, wedge=True, strength=3,
                        why=f"{_WHY_WD} heartbeat: this rank's watchdog made no progress, no "
                            "collective timeout before it")
            continue
        if r.kind == TAKEDOWN and "CUDA error" in r.text and "operation timeout" not in r.text:
            continue  # the watchdog ended on a CUDA error it met: that error is the line's
        key = {TIMEOUT: "NCCL_WATCHDOG_TIMEOUT", STATUS: "NCCL_WATCHDOG_STATUS",
               TAKEDOWN: "NCCL_PROCESS_TAKEN_DOWN", HEARTBEAT: "NCCL_WATCHDOG_STUCK"}.get(
                   r.kind, "NCCL_DEBUG_DUMP")
        yield _clue(src, key, "consequence", r.text, r.lineno, rank=rank,
                    wedge=True if r.kind in (TIMEOUT, STATUS, HEARTBEAT) else None,
                    strength=2 if r.kind in (TIMEOUT, STATUS) else 1,
                    why=f"{_WHY_WD}: what a rank waiting in the collective reports")
    first = next((r.lineno for r in recs if r.kind in (TIMEOUT, STATUS)), None)
    for s in cr.behind:
        yield _clue(src, "NCCL_RANK_BEHIND", "cause", f"Rank {s.rank}: last completed NCCL work "
                    f"{s.last_completed}, the other ranks further", None, rank=f"Rank {s.rank}",
                    suspect=f"Rank {s.rank}", wedge=True, strength=3,
                    why="the lowest last completed SeqNum of the process group, a minority")
    for s in cr.never_joined:
        yield _clue(src, "NCCL_RANK_NEVER_JOINED", "cause", f"Rank {s.rank}: last enqueued "
                    f"{s.last_enqueued}, never joined the collective the others wait in", None,
                    rank=f"Rank {s.rank}", suspect=f"Rank {s.rank}", wedge=True, strength=3,
                    why="nothing enqueued (-1), or idle while the others wait in the next one")
    if first is not None and not cr.behind and not cr.never_joined:
        seq = next((r.seq for r in recs if r.seq is not None), None)
        what = (f"ranks disagree at SeqNum {cr.mismatched[0][0]}: " + ", ".join(
            f"Rank {r} {op}" for r, op in cr.mismatched[0][1])) if cr.mismatched else (
            f"a collective (SeqNum {seq}) did not complete on the ranks shown; none stands out")
        # no line of its own: it reads every line (a line would make it that line's victim)
        yield _clue(src, "NCCL_COLLECTIVE_HUNG", "cause", what, None, wedge=True, strength=2,
                    why="every rank shown waits in it: the watchdog names no rank behind")


#: NCCL line kinds that are no failure of their own (set-up, chains and ends that follow one)
_NOT_A_FAILURE = (INIT, HARMLESS, ERROR_CHAIN, ABORT, PEER_CLOSED)


@reader("nccl_debug")
def nccl_debug(src: Source) -> Iterator[Clue]:
    """NCCL's WARN lines that name a failure (causes), the error chains and aborts that
    follow (consequences); healthy init lines as context."""
    yield from _nccl_test_failures(src)  # (nccl-tests' own lines need no "NCCL " in the text)
    if "NCCL " not in src.text:
        return
    yield from _duplicate_gpus(src)
    lines = read_nccl_lines(src.text)
    phase = init_phase(lines)
    if phase is not None and all(n.kind == INIT for n in lines):
        first = lines[0].lineno
        yield Clue(key="NCCL_BOOTSTRAP" if phase == "bootstrap" else "NCCL_INIT", label="noise",
                   text=lines[0].text[:500], source=src.path, line=first, host=src.host,
                   role=src.role, wedge=False,
                   why="NCCL communicator start-up lines, no failure" if phase == "bootstrap"
                   else "NCCL communicators set up (rings, channels), no failure")
        return
    peers = {n.peer.split("<")[0] for n in lines if n.peer}  # (IB completions, connects)
    first_init = next((n.lineno for n in lines if n.kind == INIT), len(src.text))
    serving = has_any(src.text, ENGINE_MARKS)  # (read_engine's words)
    # no WARN names the failure: each chain's innermost step, where NCCL saw it fail (with
    # the errno's words: "misc/socket.cc:505 -> 2 (Operation now in progress)")
    innermost = set() if any(n.kind not in _NOT_A_FAILURE for n in lines) else {
        n.steps[0] for n in lines if n.kind == ERROR_CHAIN and n.steps
        and n.steps[0][1].rstrip().endswith(")")}
    for n in lines:
        if n.kind == INIT:
            continue
        if n.kind == HARMLESS:
            yield _clue(src, "NCCL_HARMLESS_WARN", "noise", n.text, n.lineno, strength=1,
                        why="a warning NCCL prints on a machine without InfiniBand before it "
                            "uses its socket transport: not a failure")
            continue
        if n.kind in (ERROR_CHAIN, ABORT, PEER_CLOSED):
            # a chain passed up through init.cc in a serving engine's log: the communicator's
            # set-up failed while the server started (nccl-tests' own runs are no server's)
            init = n.kind == ERROR_CHAIN and serving and any(" init.cc:" in t for _no, t in n.steps)
            for no, text in n.steps or ((n.lineno, n.text),):  # every step of a chain
                if (no, text) in innermost:
                    yield _clue(src, "NCCL_CALL_FAILED", "cause", text, no, strength=2,
                                side="collective", stage="startup" if init else None,
                                why="the innermost step of NCCL's error chain, with the "
                                    "error's words; no WARN line says more")
                    continue
                yield _clue(src, f"NCCL_{n.kind.upper()}", "consequence", text, no, strength=1,
                            stage="startup" if init else None,
                            why="NCCL passing an error up" + (
                                " through its communicator's set-up (init.cc)" if init
                                else ", or tearing a communicator down"))
            continue
        fault = host_fault(n.text)  # the host under NCCL: /dev/shm, the NVSwitch fabric
        # a verbs call of connection set-up; a shared-memory segment NCCL could not create
        # right after its communicator set-up lines (rings, channels) in the file
        stage: Stage | None = "startup" if (n.kind == IBV_CALL and n.setup) or (
            fault and fault[0] == "/dev/shm" and first_init < n.lineno) else None
        yield _clue(src, f"NCCL_{n.kind.upper()}", "cause", n.text, n.lineno, stage=stage,
                    wedge=False, strength=3 if n.kind != "warn" or fault else 2,
                    side="host" if fault else "collective",
                    # IB work completions that failed, or connections refused, all of one
                    # peer: that link, that host
                    suspect=fault[0] if fault else (n.peer if n.peer
                                                     and len(peers) == 1 else None),
                    why=fault[1] if fault else "NCCL's own line names the failure" + (
                        " (a verbs call of connection set-up)" if stage else ""))


#: NCCL's communicator start line (INFO): the rank, its GPU's PCI bus id, the communicator
_INIT_RANK = linear.compile(r"ncclCommInitRank\S* comm 0x[0-9a-f]{1,16} rank (\d{1,6}) nranks "
                            r"\d{1,6} cudaDev \d{1,4}(?: nvmlDev \d{1,4})? busId ([0-9a-fA-F]{1,16}) "
                            r"commId (0x[0-9a-fA-F]{1,32})")
_INIT_MARKS = marks("ncclCommInitRank")


def _duplicate_gpus(src: Source) -> Iterator[Clue]:
    """Two ranks of one communicator starting on the same GPU (one PCI bus id): NCCL refuses
    it ("Duplicate GPU detected", returned as 'invalid usage'); each such start line is a
    cause, the bus id the suspect."""
    if not has_any(src.text, _INIT_MARKS):
        return
    seen: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for no, line in lines_with(src.text, _INIT_MARKS):
        m = _INIT_RANK.search(line)
        if m is not None:
            seen.setdefault((m.group(3), m.group(2)), []).append((no, m.group(1), line))
    for (_comm, bus), starts in seen.items():
        if len({rank for _no, rank, _l in starts}) < 2:
            continue
        for no, _rank, line in starts:
            yield _clue(src, "NCCL_DUPLICATE_GPU", "cause", line.strip(), no, stage="startup",
                        suspect=f"busId {bus}", wedge=False, strength=3,
                        why="two ranks of one NCCL communicator start on the same GPU (one PCI "
                            "bus id): NCCL refuses it as invalid usage; each rank needs its own "
                            "device (CUDA_VISIBLE_DEVICES, the launcher's device map)")


#: nccl-tests' harness reporting the error code an NCCL or CUDA call returned:
#: "gpu5: Test NCCL failure common.cu:343 'unhandled cuda error'"
_TEST_FAILURE = linear.compile(r"Test (?:NCCL|CUDA) failure \S{1,80}:\d{1,6} '([^'\n]{1,200})'")


_TEST_MARKS = marks("Test NCCL failure", "Test CUDA failure")


#: nccl-tests' check of the data every collective returned, printed after its table
_OUT_OF_BOUNDS = linear.compile(r"Out of bounds values : (\d{1,12}) (OK|FAILED)")
_RESULT_MARKS = marks("Out of bounds values : ")


def _nccl_test_results(src: Source) -> Iterator[Clue]:
    """nccl-tests' summary: values out of bounds are a collective that returned wrong data (a
    cause on the collective side); "0 OK" is a run that went through (progress)."""
    if not has_any(src.text, _RESULT_MARKS):
        return
    for no, line in lines_with(src.text, _RESULT_MARKS):
        m = _OUT_OF_BOUNDS.search(line)
        if m is None:
            continue
        if m.group(2) == "FAILED" or int(m.group(1)) > 0:
            yield _clue(src, "NCCL_TEST_WRONG_DATA", "cause", line.strip(), no, wedge=False,
                        strength=3, why="nccl-tests checks every result: these values came back "
                                        "wrong, so the collective corrupts data (a bug or a "
                                        "faulty link), not a hang")
        else:
            yield Clue(key="NCCL_TEST_PASSED", label="progress", text=line.strip()[:500],
                       source=src.path, line=no, host=src.host, role=src.role, wedge=False,
                       strength=2, why="nccl-tests ran its collectives to the end and found "
                                       "every value right: the run completed")


def _nccl_test_failures(src: Source) -> Iterator[Clue]:
    yield from _nccl_test_results(src)
    if not has_any(src.text, _TEST_MARKS):
        return
    for no, line in lines_with(src.text, _TEST_MARKS):
        if _TEST_FAILURE.search(line) is not None:
            yield _clue(src, "NCCL_TEST_FAILURE", "consequence", line.strip(), no, strength=1,
                        wedge=False, why="nccl-tests reports the error code a call returned: "
                                         "the WARN lines before it say why")


@reader("nccl_ras")
def nccl_ras(src: Source) -> Iterator[Clue]:
    """An NCCL RAS report: missing or dead ranks and a straggling minority (causes, named);
    ranks ahead are never named; a self-contradicting report names nobody."""
    if "Communicators..." not in src.text and "Job summary" not in src.text:
        return
    rep = parse_ras(src.text)
    if rep is None:
        return
    if rep.ok:
        yield _clue(src, "NCCL_RAS_OK", "noise", "NCCL RAS: every communicator RUNNING, no error",
                    why="RAS sees every rank inside NCCL")
        return
    r = read_ras(rep)
    named = (r.missing + r.behind) if r.reliable else ()
    for e in r.errors:
        text = " | ".join(ln.strip() for ln in e.lines[:3])
        suspect = next((n for n in named if e.comm is None or (e.comm in n)), None)
        yield _clue(src, f"NCCL_RAS_{e.title}", "cause", text, e.lineno, suspect=suspect,
                    wedge=True if e.title == "MISMATCH" else None, strength=3 if suspect else 2,
                    why="NCCL RAS" + ("" if r.reliable else ": the report contradicts itself") + (
                        f"; ahead, not stragglers: {', '.join(r.ahead)}" if r.ahead else ""))


def _fr_dump(src: Source) -> FrDump | None:
    try:
        if src.data:
            return parse_fr_bytes(src.data, src.path)
        if src.kind == "flight_recorder" and src.text.lstrip().startswith("{"):
            doc = json.loads(src.text)
            return dump_from_doc(doc, rank_from_name(src.path)) if looks_like_fr(doc) else None
    except (ParseError, ValueError, RecursionError):
        return None
    return None


@reader("flight_recorder")
def flight_recorder(src: Source) -> Iterator[Clue]:
    """One rank's Flight Recorder dump (work outstanding: the rank waits in a collective) or
    the fr_trace analyzer's report (the collective it flags, the ranks it names)."""
    d = _fr_dump(src)
    if d is not None:
        outstanding = [s for s in d.status if s.last_enqueued is not None
                       and s.last_completed is not None and s.last_enqueued > s.last_completed]
        pend = d.pending()
        rank = f"Rank {d.rank}" if d.rank is not None else None
        if outstanding or pend:
            what = (f"{pend[-1].op} SeqNum {pend[-1].seq} not completed" if pend else
                    f"last enqueued {outstanding[0].last_enqueued} > last completed "
                    f"{outstanding[0].last_completed}")
            # the rank is in the text only: one rank's dump never says who is at fault
            yield _clue(src, "FR_COLLECTIVE_OUTSTANDING", "cause", f"{rank or 'a rank'}: {what}",
                        wedge=True, strength=2,
                        why="Flight Recorder: a collective this rank entered has not completed")
        return
    if looks_like_fr_trace(src.text):
        for rep in parse_fr_trace_text(src.text):
            ranks = rep.missing or ((rep.culprit,) if rep.culprit is not None else ())
            yield _clue(src, "FR_TRACE_COLLECTIVE", "cause", rep.lines[0], rep.lineno,
                        suspect=", ".join(f"Rank {r}" for r in ranks) or None, wedge=True,
                        strength=3 if ranks else 2, why="PyTorch's Flight Recorder analyzer")


@reader("cuda_gdb")
def cuda_gdb(src: Source) -> Iterator[Clue]:
    """cuda-gdb: an NCCL collective kernel active on the GPU waits for its peers."""
    if not looks_like_cuda_gdb(src.text):
        return
    for k in parse_cuda_kernels(src.text):
        if k.collective:
            yield _clue(src, "CUDA_KERNEL_WAITS_ON_PEERS", "cause",
                        f"kernel {k.kernel}: {k.name or ', '.join(k.files[:1])} {k.status}",
                        wedge=True, strength=2, why="an NCCL collective kernel spins until every "
                                                    "peer joins")


#: torch's c10d store client giving up on its TCPStore (the rendezvous every rank of a
#: process group meets at): "[c10d] waitForInput: socket SocketImpl(..., remote=[...]:5000)
#: timed out after 1800000ms", "[c10d] TCP client failed to connect/validate to host h:8000",
#: "[c10d] recvValue failed on SocketImpl(...): Connection reset by peer"; and the NCCL
#: watchdog's own store check failing ("Failed to check the \"should dump\" flag on TCPStore")
_C10D = linear.compile(r"\[c10d\][^\n]{0,400}?(?:timed out|Connection refused|Connection reset|"
                       r"failed to connect|Failed to connect|Broken pipe)")
_STORE_GONE = linear.compile(r"Failed to check the \"should dump\" flag on TCPStore")
_REMOTE = linear.compile(r"remote=([^\s,)]{1,120})|to host ([^\s:]{1,100}:\d{1,5})|"
                         r"trying to connect to \(([^,\s]{1,100}), (\d{1,5})\)")
_TORCH_RANK = linear.compile(r"^\[rank(\d{1,5})\]")  # "[rank3]:[E..." or "[rank8] Warning"
_C10D_MARKS = marks("[c10d]", "TCPStore", "server socket has failed to listen")
#: the store's server could not bind its port (torch's DistNetworkError: EADDRINUSE, ...):
#: every client's failed connect to that port follows from it
_LISTEN_FAILED = linear.compile(r"server socket has failed to listen on any local network "
                                r"address\.? port: (\d{1,5})")
#: the peer went away: what the store's host (or the rank that owned it) did is the cause
_PEER_GONE = ("Connection reset by peer", "Broken pipe", "has shut down")


def _store_address(line: str) -> str | None:
    m = _REMOTE.search(line)
    if m is None:
        return None
    if m.group(4):
        return f"{m.group(3)}:{m.group(4)}"
    return m.group(1) or m.group(2)


def _names_port(line: str, port: str) -> bool:
    """The line names ``:port`` (a whole port number, not the start of a longer one)."""
    at = line.find(f":{port}")
    while at >= 0:
        end = at + len(port) + 1
        if end == len(line) or not line[end].isdigit():
            return True
        at = line.find(f":{port}", at + 1)
    return False


@reader("c10d_store")
def c10d_store(src: Source) -> Iterator[Clue]:
    """The c10d store unreachable or silent: the ranks cannot meet (the store's address is the
    suspect). A failed connect is at start-up (the rendezvous) and a cause; a connection the
    store's side reset is a consequence of whatever ended that side. One clue per rank, address
    and kind."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _C10D_MARKS):
        return
    seen: set[tuple[str | None, str | None, bool]] = set()
    unbound: set[str] = set()  # ports the store's server failed to listen on
    for no, line in lines_with(src.text, ("server socket has failed to listen",)):
        if (lm := _LISTEN_FAILED.search(line)) is not None:
            unbound.add(lm.group(1))
            yield _clue(src, "C10D_STORE_LISTEN_FAILED", "cause", line.strip()[:500], no,
                        suspect=f"port {lm.group(1)}", strength=3, stage="startup", wedge=False,
                        why="torch c10d: the store's server could not listen on its port (in "
                            "use by another process, or a port handed out twice): the ranks "
                            "cannot meet")
    found = lines_with(src.text, ("[c10d]", "TCPStore"))
    # the store's address, where one line names it (the watchdog's check names none)
    store = next((a for _no, ln in found if (a := _store_address(ln)) is not None), None)
    for no, line in found:
        gone_check = _STORE_GONE.search(line) is not None
        if not gone_check and _C10D.search(line) is None:
            continue
        where = _store_address(line) or store
        r = _TORCH_RANK.match(line)
        rank = f"rank {r.group(1)}" if r else parse_rank(line)
        gone = gone_check or any(g in line for g in _PEER_GONE)
        if (rank, where, gone) in seen:
            continue
        seen.add((rank, where, gone))
        connect = "connect" in line.lower() and not gone
        if connect and any(_names_port(line, p) for p in unbound):
            yield _clue(src, "C10D_STORE_FAILURE", "consequence", line.strip()[:500], no,
                        rank=rank, suspect=where, strength=2, stage="startup", wedge=False,
                        why="torch c10d: a client could not connect to the store whose server "
                            "failed to listen on that port")
            continue
        if gone:
            yield _clue(src, "C10D_STORE_GONE", "consequence", line.strip()[:500], no, rank=rank,
                        suspect=where, strength=2, stage=NOT_ESTABLISHED,
                        why="torch c10d: the store's side closed the connection (the store's "
                            "host, rank 0's, went away): what ended it is the cause")
            continue
        yield _clue(src, "C10D_STORE_FAILURE", "cause", line.strip()[:500], no, rank=rank,
                    suspect=where, strength=3, stage="startup" if connect else None,
                    wedge=False if connect else None,
                    why="torch c10d: the store every rank of the group meets at did not answer"
                        + (" (at the rendezvous: the group never formed)" if connect else ""))


#: gloo's messages while a process group forms (gloo/transport/tcp, torch ProcessGroupGloo):
#: the full mesh every rank connects at creation, and the fallback to the loopback address
#: when the host name resolves to no local address (peers on other hosts cannot reach it)
_GLOO_MESH = "connectFullMesh failed"
_GLOO_LOOPBACK = "Using the loopback"
_GLOO_MARKS = marks(_GLOO_MESH, _GLOO_LOOPBACK)


@reader("gloo_setup")
def gloo_setup(src: Source) -> Iterator[Clue]:
    """gloo could not build its full mesh (the group never formed: start-up), and the loopback
    fallback that makes a rank publish an address its peers cannot reach (the cause, when the
    mesh then fails)."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _GLOO_MARKS):
        return
    found = lines_with(src.text, _GLOO_MARKS)
    mesh_failed = any(_GLOO_MESH in ln for _no, ln in found)
    for no, line in found:
        r = _TORCH_RANK.match(line)
        rank = f"rank{r.group(1)}" if r else parse_rank(line)
        if _GLOO_LOOPBACK in line and "resolve" in line.lower():
            yield _clue(src, "GLOO_LOOPBACK_FALLBACK", "cause" if mesh_failed else "noise",
                        line.strip(), no, rank=rank, stage="startup", strength=2,
                        suspect=rank if mesh_failed else None,
                        wedge=False if mesh_failed else None,
                        why="gloo: the host name resolves to no local address, so this rank "
                            "uses the loopback address, which peers on other hosts cannot reach "
                            "(GLOO_SOCKET_IFNAME names the interface)")
        elif _GLOO_MESH in line:
            yield _clue(src, "GLOO_MESH_FAILED", "consequence", line.strip(), no, rank=rank,
                        stage="startup", strength=2, wedge=False,
                        why="gloo connects every rank to every other when a process group is "
                            "created: a connection failed, so the group never formed")


#: torch ProcessGroupGloo::monitoredBarrier: a rank that reached the barrier reports the peer it
#: heard an error from; rank 0 reports the ranks that never arrived
_BARRIER_PEER = linear.compile(r"Rank (\d{1,6}) successfully reached monitoredBarrier, but received "
                               r"errors while waiting for send/recv from rank (\d{1,6})")
_BARRIER_MISSING = linear.compile(r"Ranks? ([\d, ]{1,200}) failed to pass monitoredBarrier")
_BARRIER_MARKS = marks("monitoredBarrier")


@reader("monitored_barrier")
def monitored_barrier(src: Source) -> Iterator[Clue]:
    """A monitored barrier's report: the rank it names is the one to look at (the reporting
    rank's own failure follows from it, join.py), ranks that never arrived are the cause."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _BARRIER_MARKS):
        return
    for no, line in lines_with(src.text, _BARRIER_MARKS):
        if (m := _BARRIER_PEER.search(line)) is not None:
            yield _clue(src, "BARRIER_PEER_FAILED", "consequence", line.strip(), no,
                        rank=f"rank {m.group(1)}", suspect=f"rank {m.group(2)}", wedge=False,
                        strength=2, why="torch's monitored barrier: this rank reached it but got "
                                        f"an error from rank {m.group(2)}, whose log holds the "
                                        "failure")
        elif (m := _BARRIER_MISSING.search(line)) is not None:
            ranks = ", ".join(r.strip() for r in m.group(1).split(",") if r.strip())
            yield _clue(src, "BARRIER_RANKS_MISSING", "cause", line.strip(), no,
                        suspect=f"rank {ranks}", strength=3,
                        why="torch's monitored barrier: these ranks never arrived (stuck or gone "
                            "before it)")
