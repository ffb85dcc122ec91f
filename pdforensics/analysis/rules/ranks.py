"""Scheduler ranks from their stacks: the odd rank out, all ranks stuck, py-spy failures."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.findings import Evidence, Finding, Need, SkipRule, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.analysis.rules.rank_judgement import (
    Persistence,
    frame_persistence,
    history_persistence,
    next_step_for,
    progress_note,
    role_state,
    service_state,
    stuck_severity,
    weakest,
)
from pdforensics.analysis.stacks_classify import (
    COLLECTIVE,
    CUDA_SYNC,
    IDLE_CLASSES,
    PEER_WAIT,
    SUSPECT_CLASSES,
    classify_stack,
)
from pdforensics.parsers.frames import Frame, ThreadStack
from pdforensics.views.loaded import ProcessView, ServiceView

_DIGITS = linear.compile(r"\d{1,9}")

#: Classes whose stuck stack explains frozen queues (so it sorts before them).
CAUSE_CLASSES = frozenset({COLLECTIVE, CUDA_SYNC})


def rank_order(label: str | None) -> tuple[int, ...]:
    """``DP1_TP3`` -> (1, 3); unknown ranks last."""
    if not label:
        return (10**9,)
    return tuple(int(n) for n in _DIGITS.findall(label)) or (10**9,)


def main_threads(p: ProcessView) -> list[tuple[float, ThreadStack, str]]:
    """(taken_at, MainThread stack, stack result key) of each dump of a process, in order."""
    out = []
    for sd in p.stacks:
        for d in sd.dumps:
            if not d.threads:
                continue
            t = next((t for t in d.threads if t.name == "MainThread"), d.threads[0])
            out.append((sd.taken_at, t, sd.key))
    return out


def _fkey(t: ThreadStack) -> tuple[tuple[str, str], ...]:
    return tuple((f.function, f.file) for f in t.frames)


def _exact(t: ThreadStack) -> tuple[tuple[str, str, int | None], ...]:
    return tuple((f.function, f.file, f.line) for f in t.frames)


def _divergence(a: ThreadStack, b: ThreadStack) -> tuple[Frame | None, Frame | None, Frame | None]:
    """(last common frame from the root, a's first own frame, b's first own frame)."""
    ra, rb = list(reversed(a.frames)), list(reversed(b.frames))
    common: Frame | None = None
    for fa, fb in zip(ra, rb, strict=False):
        if (fa.function, fa.file) != (fb.function, fb.file):
            return common, fa, fb
        common = fa
    n = min(len(ra), len(rb))
    return common, ra[n] if len(ra) > n else None, rb[n] if len(rb) > n else None


def _frame_name(t: ThreadStack, deciding: Frame | None) -> str:
    return (deciding or t.leaf or Frame("?")).function


@rule("RANK_OUTLIER", needs=(Need.STACKS,), rank=30)
def rank_outlier(ctx: Context) -> Iterator[Finding]:
    """One scheduler rank's stack differs from its peers' (the odd rank out is the suspect).

    Critical only when its stack persisted (>= 3 dumps over >= 10 s) and the server's progress
    is frozen or cannot be judged; info when the server progresses."""
    compared = 0
    for svc in ctx.servers():
        hist = {p.info.rank: (p, main_threads(p)) for p in svc.ranks if main_threads(p)}
        if len(hist) < 2:
            continue
        compared += 1
        ranks = sorted(hist, key=rank_order)
        latest = {r: hist[r][1][-1][1] for r in ranks}
        groups: dict[tuple[tuple[str, str], ...], list[str | None]] = {}
        for r in ranks:
            groups.setdefault(_fkey(latest[r]), []).append(r)
        if len(groups) < 2:
            continue
        biggest = max(len(g) for g in groups.values())
        majority = [g for g in groups.values() if len(g) == biggest]
        if len(majority) == 1 and biggest * 2 > len(ranks):
            reference = majority[0]
            basis = f"the majority ({biggest}/{len(ranks)} ranks)"
        else:
            reference = next(g for g in groups.values() if ranks[0] in g)
            basis = (f"rank {ranks[0]} (no majority among {len(ranks)} ranks; rank 0 leads the "
                     "tp group, its peers must follow its collectives)")
        ref = reference[0]
        ref_seen = {_fkey(s) for _, s, _ in hist[ref][1]}  # every stack the reference was seen in
        for r in ranks:
            if r not in reference:
                yield from _outlier(ctx, svc, hist, r, ref, basis, ref_seen)
    if not compared:
        raise SkipRule("no server with stacks of 2 or more scheduler ranks")


def _outlier(ctx: Context, svc: ServiceView,
             hist: dict[str | None, tuple[ProcessView, list[tuple[float, ThreadStack, str]]]],
             r: str | None, ref: str | None, basis: str,
             ref_seen: set[tuple[tuple[str, str], ...]]) -> Iterator[Finding]:
    p, h = hist[r]
    t = h[-1][1]
    cls, deciding = classify_stack(t)
    if cls not in SUSPECT_CLASSES and cls != PEER_WAIT:  # a rank waiting for a peer is out of step
        return
    persist = history_persistence(h)
    if len(h) >= 2 and persist.dumps < 2:
        return  # it moved between dumps: passing through, not stuck
    if _fkey(t) in ref_seen:
        return  # the reference rank was seen in that very stack: same loop, other phase
    ref_t = hist[ref][1][-1][1]
    rcls, rdec = classify_stack(ref_t)
    common, mine, theirs = _divergence(t, ref_t)
    state = service_state(ctx, svc)
    severity = stuck_severity(persist, state)
    where = (f" for >= {persist.span_s:.1f} s across {persist.dumps} dumps"
             if persist.span_s is not None
             else " (one dump only: cannot tell stuck from passing through)")
    ev: list[Evidence | str] = [
        Evidence(svc.host, f"py-spy {svc.role} {r} pid {p.info.pid}",
                 f"MainThread in {deciding or t.leaf} [{cls}]{where}; leaf {t.leaf}",
                 ctx.path_of(svc.host, h[-1][2])),
        Evidence(svc.host, f"py-spy {svc.role} {ref} pid {hist[ref][0].info.pid}",
                 f"MainThread in {rdec or ref_t.leaf} [{rcls}]",
                 ctx.path_of(svc.host, hist[ref][1][-1][2])),
        f"compared with {basis}; the stacks part below "
        f"{common.function if common else 'the root'}: {r} enters "
        f"{mine.function if mine else '(nothing)'}, {ref} enters "
        f"{theirs.function if theirs else '(nothing)'}",
        f"{svc.label}: {progress_note(state)}"
        + (f": {ctx.progress(svc).text()}" if state != "unjudged" else ""),
    ]
    if severity != "info" and persist.shortfall():
        ev.append(persist.shortfall())
    mine_fn, ref_fn = _frame_name(t, deciding), _frame_name(ref_t, rdec)
    if severity == "info":
        title = (f"{svc.label}: rank {r} sits in {mine_fn} [{cls}] at every dump while {ref} "
                 f"is in {ref_fn}, yet the server progresses")
        step = ("Nothing to do while the counters rise: a rank caught in another phase of "
                "the same work. Capture again if progress stops.")
    else:
        title = f"{svc.label}: rank {r} sits in {mine_fn} [{cls}] while {ref} is in {ref_fn}"
        step = f"Rank {r} is the suspect. " + next_step_for(cls, deciding, svc.role, True)
    critical = severity == "critical"
    yield Finding(
        "RANK_OUTLIER", severity, title, tuple(ev), step,
        section="ranks", wedge=critical and state == "frozen",
        rank=14 if critical and cls in CAUSE_CLASSES else None,  # one odd rank explains most
        subject=svc.label,
    )


def _role_processes(ctx: Context, role: str | None, kind: str,
                    ranks: tuple[str, ...]) -> list[ProcessView]:
    return [p for h in ctx.capture.hosts for p in h.processes
            if p.info.role == role and p.info.kind == kind
            and (p.info.rank or f"pid {p.info.pid}") in ranks]


@rule("ALL_RANKS_STUCK", needs=(Need.STACKS,), rank=32)
def all_ranks_stuck(ctx: Context) -> Iterator[Finding]:
    """Every scheduler rank of a role sits unmoved in the same non-idle frame.

    Critical only when the stacks persisted (>= 3 dumps over >= 10 s) and the role's progress
    is frozen or cannot be judged; info ("yet the server progresses") when it moves."""
    report = ctx.stacks
    if report is None:
        raise SkipRule("no stack dumps")
    for a in report.all_stuck:
        if a.kind != "scheduler" or a.leaf_class in IDLE_CLASSES:
            continue
        svcs = ctx.servers(a.role) if a.role else []
        procs = _role_processes(ctx, a.role, a.kind, a.ranks)
        persist = (weakest([frame_persistence(p, a.frame) for p in procs]) if procs
                   else Persistence(0, a.stuck_for_s))
        state = role_state(ctx, svcs)
        severity = stuck_severity(persist, state)
        span = f" for >= {a.stuck_for_s:.1f} s" if a.stuck_for_s is not None else ""
        ev: list[Evidence | str] = [
            Evidence(", ".join(sorted({s.host for s in svcs})) or "", "py-spy",
                     f"ranks {', '.join(a.ranks)} all in {a.frame} [{a.leaf_class}]"
                     f"{span}, unchanged between dumps ({persist.text()} on the least "
                     "persistent rank)")]
        ev.extend(f"{s.label} progress {service_state(ctx, s)}: "
                  f"{ctx.progress(s).text()}" for s in svcs if ctx.progress(s).judged)
        ev.append(f"{a.role}: {progress_note(state)}")
        if severity != "info" and persist.shortfall():
            ev.append(persist.shortfall())
        ranks = ", ".join(a.ranks)
        if severity == "info":
            title = (f"{a.role} scheduler ranks ({ranks}) sit in {a.frame.function} "
                     f"[{a.leaf_class}] at every dump, yet the server progresses")
            step = ("Nothing to do while the counters rise: identical stacks on a server that "
                    "progresses are SPMD ranks doing the same work. Capture again if progress "
                    "stops.")
        else:
            title = (f"every {a.role} scheduler rank ({ranks}) is stuck in "
                     f"{a.frame.function} [{a.leaf_class}]")
            step = ("All ranks wait in the same place, so no single rank is to blame. "
                    + next_step_for(a.leaf_class, a.frame, a.role, False))
        critical = severity == "critical"
        yield Finding(
            "ALL_RANKS_STUCK", severity, title, tuple(ev), step,
            section="ranks", wedge=critical and state == "frozen",
            rank=16 if critical and a.leaf_class in CAUSE_CLASSES else None,
        )


@rule("PYSPY_UNAVAILABLE", needs=(Need.PROCESSES,), rank=90)
def pyspy_unavailable(ctx: Context) -> Iterator[Finding]:
    """Stacks missing: why py-spy failed and how to fix it."""
    for h in ctx.capture.hosts:
        failed: dict[tuple[str, str, str], list[int]] = {}
        missing = []
        for p in h.processes:
            if p.info.kind not in ("server", "scheduler", "router", "detokenizer", "tokenizer"):
                continue
            if p.info.kind == "router" and "python" not in (p.info.args.split() or [""])[0]:
                continue  # a native gateway (smg::router, sgl-model-gateway): nothing for py-spy
            if not p.stacks:
                missing.append(p.info.pid)
                continue
            for sd in p.stacks:
                if sd.dumps:
                    continue
                if sd.failure is not None:
                    k = (sd.failure.reason, sd.failure.message, sd.failure.fix)
                elif sd.timed_out:
                    k = ("timeout", f"py-spy timed out after {sd.duration_s:.1f} s",
                         "the process may be in D state: retry with --nonblocking")
                else:
                    k = ("error", sd.error or "no dump", "run py-spy by hand to see why")
                failed.setdefault(k, []).append(p.info.pid)
        for (reason, message, fix), pids in failed.items():
            pid_list = ", ".join(str(x) for x in sorted(set(pids)))
            yield Finding(
                "PYSPY_UNAVAILABLE", "warning",
                f"{h.name}: py-spy failed ({reason}) on {len(set(pids))} process(es)",
                (Evidence(h.name, "py-spy", f"pids {pid_list}: {message}"),),
                fix or "install py-spy, grant CAP_SYS_PTRACE, or run as root",
                section="stacks",
            )
        if missing and not failed:
            yield Finding(
                "PYSPY_UNAVAILABLE", "info",
                f"{h.name}: no stacks were collected for {len(missing)} process(es)",
                (Evidence(h.name, "capture", "pids " + ", ".join(map(str, missing[:20]))
                          + ": no py-spy run (stacks disabled, deadline reached, or py-spy "
                          "missing)"),),
                "Capture again with stacks enabled; install py-spy on the host (pip install "
                "py-spy) and run as root or with CAP_SYS_PTRACE.",
                section="stacks",
            )
