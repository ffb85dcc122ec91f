"""Collectives between ranks: NCCL watchdog timeouts read across ranks, ranks missing from a
collective (watchdog, Flight Recorder, fr_trace, NCCL RAS), NCCL's network errors, and GPU
kernels that wait for their peers (cuda-gdb)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pdforensics.analysis.beneath_view import World, cuda_listings, fr_dumps, log_readings, rank_label, worlds
from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.flight_recorder import compare_dumps
from pdforensics.parsers.nccl_debug import IB_COMPLETION, IBV_CALL, MISMATCH, PEER_CLOSED
from pdforensics.parsers.nccl_ras import RasReport, read_ras
from pdforensics.parsers.nccl_watchdog import HEARTBEAT, STATUS, TIMEOUT, CrossRank, RankState, cross_rank

_DUMP_HINT = ("set TORCH_NCCL_TRACE_BUFFER_SIZE (TORCH_FR_BUFFER_SIZE) and TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
              "so every rank writes a Flight Recorder dump, and capture with --nccl-ras")


def _ev(world: World, recs: Sequence[object], limit: int = 8) -> list[Evidence | str]:
    out: list[Evidence | str] = []
    for r, log in world.records:
        if r in recs and len(out) < limit:
            out.append(log.evidence(f"{log.service.role} log", r.lineno, r.text))
    return out


def _state(s: RankState) -> str:
    return (f"Rank {s.rank}: last enqueued {s.last_enqueued}, last completed {s.last_completed}"
            + (f" (PG {s.pg})" if s.pg else ""))


def _timeout_title(world: World, cr: CrossRank, ops: list[str], seqs: list[int]) -> str:
    ranks = sorted({r.rank for r in world.plain() if r.rank is not None and r.kind in
                    (TIMEOUT, STATUS)}, key=lambda x: int(x) if x.isdigit() else 0)
    what = f"{'/'.join(dict.fromkeys(ops)) or 'a collective'}"
    where = f" at SeqNum {min(seqs)}" if seqs else ""
    head = f"{world.name}: NCCL {what}{where} timed out on rank(s) {', '.join(ranks) or '?'}"
    if cr.behind:
        b = cr.behind[0]
        return (head + f"; Rank {b.rank} is behind (last completed {b.last_completed}, the "
                "others further)")
    if cr.never_joined:
        return head + f"; Rank {cr.never_joined[0].rank} never joined it"
    if cr.mismatched:
        seq, ops_by = cr.mismatched[0]
        return head + f"; the ranks disagree at SeqNum {seq}: " + ", ".join(
            f"Rank {r} {op}" for r, op in ops_by)
    return head + "; no rank stands out (the same numbers on every rank shown)"


@rule("NCCL_COLLECTIVE_TIMEOUT", needs=(Need.BENEATH,), rank=7)
def nccl_collective_timeout(ctx: Context) -> Iterator[Finding]:
    """torch's NCCL watchdog caught a collective past its timeout; read across ranks, the
    rank with the lowest last completed SeqNum is behind and the others are its victims."""
    for world in worlds(ctx.capture):
        recs = world.plain()
        if not any(r.kind in (TIMEOUT, STATUS) for r in recs):
            continue
        cr = cross_rank(recs)
        ops = [r.op for r in recs if r.kind == TIMEOUT and r.op]
        seqs = [r.seq for r in recs if r.kind in (TIMEOUT, STATUS) and r.seq is not None]
        named = cr.behind + cr.never_joined
        ev: list[Evidence | str] = [_state(s) for s in named]
        ev += _ev(world, [r for r in recs if r.kind in (TIMEOUT, STATUS)])
        if cr.victims:
            ev.append(f"victims (timed out waiting): Rank {', Rank '.join(cr.victims)}")
        nxt = ("Look at the rank behind: its stack (py-spy, gdb), its GPU (Xid, nvidia-smi) and "
               "host; the other ranks only wait for it. " if named else
               "Every rank shown waits in the same collective: find what they wait on (a rank "
               "whose log is missing, a dead process, the network). ") + _DUMP_HINT + "."
        yield Finding("NCCL_COLLECTIVE_TIMEOUT", "critical", _timeout_title(world, cr, ops, seqs),
                      tuple(ev), nxt, section="logs", wedge=True, rank=6 if named else None,
                      subject=world.name, side="collective",
                      suspect=", ".join(f"Rank {s.rank}" for s in named) or None)


@rule("NCCL_WATCHDOG_STUCK", needs=(Need.BENEATH,), rank=8)
def nccl_watchdog_stuck(ctx: Context) -> Iterator[Finding]:
    """torch's heartbeat monitor: a rank's NCCL watchdog itself made no progress (a CUDA or
    NCCL call hung in that process); after a collective timeout it is the abort that hung."""
    for world in worlds(ctx.capture):
        recs = world.plain()
        stalls = [r for r in recs if r.kind == HEARTBEAT]
        if not stalls:
            continue
        cr = cross_rank(recs)
        lead = cr.stuck_watchdogs
        title = (f"{world.name}: the NCCL watchdog of Rank {', Rank '.join(r.rank or '?' for r in lead)} "
                 f"got stuck for {lead[0].stuck_s} s (a CUDA/NCCL call hung in that process)"
                 if lead else f"{world.name}: an NCCL watchdog got stuck after a collective "
                 "timeout (the abort or the debug dump hung)")
        yield Finding(
            "NCCL_WATCHDOG_STUCK", "critical" if lead else "warning", title,
            tuple(_ev(world, stalls)),
            "Dump that rank's native stacks (gdb thread apply all bt, py-spy --native): the "
            "thread holding a CUDA call (cudaEventDestroy, cudaStreamSynchronize) or the GIL is "
            "the hang; TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only changes when it is reported.",
            section="logs", wedge=bool(lead), subject=world.name, side="collective",
            suspect=", ".join(f"Rank {r.rank}" for r in lead if r.rank) or None)


def _missing_from_watchdog(ctx: Context) -> Iterator[Finding]:
    for world in worlds(ctx.capture):
        cr = cross_rank(world.plain())
        if not cr.never_joined:
            continue
        seq = f" {cr.waiting_in}" if cr.waiting_in is not None else ""
        ranks = ", ".join(f"Rank {s.rank}" for s in cr.never_joined)
        yield Finding(
            "RANK_MISSING_FROM_COLLECTIVE", "critical",
            f"{world.name}: {ranks} never joined collective{seq} the other ranks wait in",
            tuple([_state(s) for s in cr.never_joined + cr.behind]
                  + _ev(world, [r for r in world.plain() if r.kind == STATUS])),
            "That rank never called the collective: its Python stack (py-spy) shows where it "
            "is instead (another collective, a different code path, an exception).",
            section="logs", wedge=True, rank=5, subject=world.name, side="collective",
            suspect=ranks)


def _missing_from_flight_recorder(ctx: Context) -> Iterator[Finding]:
    dumps = fr_dumps(ctx.capture)
    if len(dumps) < 2:
        return
    where = {d.rank: (host, path) for host, path, d in dumps}
    for f in compare_dumps([d for _h, _p, d in dumps]):
        if not f.missing and not f.mismatched:
            continue
        what = (f"Rank {', Rank '.join(map(str, f.missing))} never joined" if f.missing else
                "ranks disagree on")
        ev: list[Evidence | str] = [
            Evidence(where[r][0], "Flight Recorder", f"Rank {r}: {f.op} SeqNum {f.seq} entered",
                     where[r][1]) for r in f.joined if r in where]
        ev += [f"Rank {r} entered {what_}" for r, what_ in f.mismatched]
        if f.no_dump:
            ev.append(f"no dump from rank(s) {', '.join(map(str, f.no_dump))}: not judged")
        yield Finding(
            "RANK_MISSING_FROM_COLLECTIVE", "critical",
            f"Flight Recorder (process group {f.pg or '?'}): {what} collective {f.seq} "
            f"({f.op}) that Rank {', Rank '.join(map(str, f.joined))} entered", tuple(ev),
            "The missing rank's own dump ends before that collective: its last entries and its "
            "stack show where it went instead; the ranks that entered only wait for it.",
            section="logs", wedge=True, rank=5, side="collective",
            suspect=", ".join(f"Rank {r}" for r in f.missing) or None)


def _missing_from_reports(ctx: Context) -> Iterator[Finding]:
    for log in log_readings(ctx.capture):
        for rep in log.beneath.fr_trace:
            if rep.missing or rep.culprit is not None:
                ranks = rep.missing or (rep.culprit,)
                yield Finding(
                    "RANK_MISSING_FROM_COLLECTIVE", "critical",
                    f"fr_trace: collective {rep.collective}: missing Rank "
                    f"{', Rank '.join(map(str, ranks))}",
                    (log.evidence("fr_trace", rep.lineno, " | ".join(rep.lines[:4])),),
                    "PyTorch's analyzer names the rank: read its dump and stack.",
                    section="logs", wedge=True, rank=5, side="collective",
                    suspect=", ".join(f"Rank {r}" for r in ranks))
    for host, text_path, ras in _ras_reports(ctx):
        reading = read_ras(ras)
        names = reading.missing + reading.behind
        if names and reading.reliable:
            yield Finding(
                "RANK_MISSING_FROM_COLLECTIVE", "critical",
                f"{host}: NCCL RAS: {', '.join(names[:6])} missing or behind",
                tuple(Evidence(host, "ncclras", " | ".join(e.lines[:5])[:300], text_path)
                      for e in reading.errors[:6]),
                "RAS names the process and node: check that process (alive? stuck? its GPU) "
                "before the others, which only wait.", section="logs", wedge=True, rank=5,
                side="collective", suspect=", ".join(n.split(" (")[0] for n in names[:4]))


def _ras_reports(ctx: Context) -> list[tuple[str, str | None, RasReport]]:
    out: list[tuple[str, str | None, RasReport]] = []
    for h in ctx.capture.hosts:
        if h.nccl_ras is not None:
            path = next((e.path for e in ctx.capture.results if e.host == h.name
                         and e.source == "nccl_ras"), None)
            out.append((h.name, path, h.nccl_ras))
    for log in log_readings(ctx.capture):
        if log.beneath.ras is not None:
            out.append((log.service.host, log.path, log.beneath.ras))
    return out


@rule("RANK_MISSING_FROM_COLLECTIVE", needs=(Need.BENEATH,), rank=6)
def rank_missing_from_collective(ctx: Context) -> Iterator[Finding]:
    """A rank that never joined the collective the others wait in: nothing enqueued (-1) or
    idle while they wait (watchdog), no entry for it (Flight Recorder, fr_trace), missing,
    dead or behind as a minority (NCCL RAS; ranks *ahead* are not stragglers)."""
    yield from _missing_from_watchdog(ctx)
    yield from _missing_from_flight_recorder(ctx)
    yield from _missing_from_reports(ctx)


@rule("NCCL_RAS_REPORT", needs=(Need.BENEATH,), rank=44)
def nccl_ras_report(ctx: Context) -> Iterator[Finding]:
    """What an NCCL RAS report says of the communicators, ranks ahead kept apart."""
    for host, path, ras in _ras_reports(ctx):
        r = read_ras(ras)
        status = ", ".join(f"group {g.group} {g.status} {g.errors}" for g in ras.groups)
        notes: list[Evidence | str] = []
        if r.ahead:
            notes.append(f"ahead (waiting for the others, not stragglers): {', '.join(r.ahead)}")
        if not r.reliable:
            notes.append("the report contradicts itself (more missing ranks than the job has "
                         "processes): nobody is named from it")
        ev: list[Evidence | str] = [Evidence(host, "ncclras", " | ".join(e.lines[:4])[:300], path)
                                    for e in r.errors[:6]]
        yield Finding(
            "NCCL_RAS_REPORT", "info" if ras.ok else "warning",
            f"{host}: NCCL RAS: {status or 'no communicator table'}", tuple(ev + notes),
            "RUNNING / OK while a collective times out means every rank is inside NCCL and "
            "none is missing: look at what the collective waits on (the network, a GPU).",
            section="logs")


@rule("NCCL_NETWORK_ERROR", needs=(Need.BENEATH,), rank=9)
def nccl_network_error(ctx: Context) -> Iterator[Finding]:
    """NCCL's own warnings that name a failure: an InfiniBand work completion with an error,
    a verbs call that failed (connection set-up), a mismatch, a peer that closed."""
    for log in log_readings(ctx.capture):
        bad = [n for n in log.beneath.nccl if n.kind in (IB_COMPLETION, IBV_CALL, MISMATCH,
                                                         PEER_CLOSED)]
        if not bad:
            continue
        kinds = sorted({n.kind for n in bad})
        setup = all(n.setup for n in bad if n.kind == IBV_CALL) and IBV_CALL in kinds
        hosts = sorted({n.host for n in bad})
        yield Finding(
            "NCCL_NETWORK_ERROR", "critical",
            f"{log.service.label}: NCCL {', '.join(k.replace('_', ' ') for k in kinds)} "
            f"({len(bad)} line(s), on {', '.join(hosts[:4])})"
            + (": connection set-up failed, the communicator never started" if setup else ""),
            tuple(log.evidence("NCCL", n.lineno, n.text) for n in bad[:8]),
            "An IB completion error names the peer: check that link and that peer's host "
            "(ibstat, ibv_devinfo, dmesg). A failed ibv_create_* at start-up is the RDMA "
            "device or its limits (ulimit -l, GID index, NCCL_IB_HCA).",
            section="logs", subject=log.service.label)


@rule("KERNEL_WAITS_ON_PEERS", needs=(Need.CUDA,), rank=17)
def kernel_waits_on_peers(ctx: Context) -> Iterator[Finding]:
    """An NCCL collective kernel active on a rank's GPU (cuda-gdb): it waits for its peers;
    ranks of the same server without one never launched the collective."""
    listed = list(cuda_listings(ctx.capture))
    waiting = [(h, p, [k for k in ks if k.collective]) for h, p, ks in listed]
    spinning = [(h, p, ks) for h, p, ks in waiting if ks]
    if not spinning:
        return
    absent = [rank_label(p) for _h, p, ks in waiting if not ks]
    ev: list[Evidence | str] = [
        Evidence(h.name, "cuda-gdb", f"{rank_label(p)}: {k.name or k.files[:1]} "
                 f"{k.status} grid {k.grid} block {k.block}".strip()) for h, p, ks in spinning
        for k in ks[:2]]
    title = (f"{len(spinning)} rank(s) have an NCCL collective kernel running on the GPU, "
             "waiting for their peers")
    if absent:
        title += f"; {', '.join(absent)} has none (never launched it)"
    yield Finding(
        "KERNEL_WAITS_ON_PEERS", "critical" if absent else "warning", title, tuple(ev),
        "A collective kernel spins until every peer joins: the rank without one is the one "
        "to look at (py-spy / gdb stack); if every rank spins, the link between them is.",
        section="stacks", wedge=bool(absent), rank=5 if absent else None, side="collective",
        suspect=", ".join(absent) or None)
