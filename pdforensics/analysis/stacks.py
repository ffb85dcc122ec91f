"""Cross-rank stack analysis: buckets at three levels, outliers, stuck threads, all-stuck."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace

from pdforensics import linear
from pdforensics.analysis.stacks_classify import (
    BUSY,
    CLASS_MEANING,
    COLLECTIVE,
    IDLE_CLASSES,
    PEER_WAIT,
    SUSPECT_CLASSES,
    blocked_frame,
    classify_stack,
    noise_reason,
)
from pdforensics.analysis.stacks_load import load_stack_files
from pdforensics.analysis.stacks_model import (
    AllStuck,
    Bucket,
    DumpError,
    LabelledDump,
    Level,
    Member,
    Outlier,
    StackReport,
    StuckThread,
)
from pdforensics.analysis.stacks_tree import find_outliers
from pdforensics.parsers.frames import Frame, ThreadStack
from pdforensics.parsers.logtime import read_stamp
from pdforensics.parsers.pyspy import classify_pyspy_error

__all__ = [
    "LabelledDump", "StackReport", "analyze_stacks", "stacks_json", "format_stacks_text",
    "load_stack_files", "rank_from_title", "process_kind", "all_stuck",
]

_TITLE = linear.compile(r"sglang::([A-Za-z]+(?:_[a-z]+)*?)(?:_((?:(?:DP|PP|TP|EP|CP)\d+_?)+))?(?:\s|$)")
_RANK = linear.compile(r"(?:(?:DP|PP|TP|EP|CP)\d+_?)+")


def rank_from_title(args: str) -> str | None:
    """``sglang::scheduler_TP3`` -> ``TP3``; ``sglang::scheduler_DP1_TP3`` -> ``DP1_TP3``."""
    m = _TITLE.search(args)
    if m is None or not m.group(2):
        return None
    return m.group(2).rstrip("_")


def process_kind(command: str, dump_kind: str = "pyspy") -> str:
    """``sglang::scheduler_TP3`` -> ``scheduler``; other processes: ``python`` or ``go``."""
    m = _TITLE.search(command)
    if m is not None:
        return m.group(1)
    return "go" if dump_kind == "goroutines" else "python"


class _Proc:
    """One process identity with its dumps in time order."""

    __slots__ = ("key", "dumps", "times", "role", "rank", "kind", "host", "pid", "source")

    def __init__(self, key: tuple[object, ...], ld: LabelledDump) -> None:
        d = ld.dump
        self.key = key
        self.dumps: list[LabelledDump] = []
        self.times: list[float | None] = []
        self.role = ld.role
        self.rank = ld.rank or d.rank or rank_from_title(d.command)
        self.kind = ld.kind or process_kind(d.command, d.kind)
        self.host, self.pid, self.source = ld.host, d.pid, ld.source


def _member(p: _Proc, t: ThreadStack) -> Member:
    return Member(p.host, p.pid, p.rank, t.thread_id, t.name, p.role, p.kind, p.source)


def _fn(f: Frame) -> str:
    """A frame's function for bucketing: a native frame's bare address (``0x7f..`` in
    libc.so.6) differs per process and per run, its library does not."""
    return "<native>" if f.function.startswith("0x") else f.function


def _level_key(t: ThreadStack, level: Level) -> tuple[object, ...]:
    if level == "exact":
        return tuple((_fn(f), f.file, f.line) for f in t.frames)
    if level == "any_line":
        return tuple((_fn(f), f.file) for f in t.frames)
    return tuple(_fn(f) for f in t.frames)


_Item = tuple[Member, ThreadStack, str, int]  # member, thread, class, id of its exact key


def _coarser(exact: tuple[object, ...], level: Level) -> tuple[object, ...]:
    """An exact key (function, file, line per frame) cut down to ``level``."""
    if level == "exact":
        return exact
    if level == "any_line":
        return tuple(k[:2] for k in exact)  # type: ignore[index]
    return tuple(k[0] for k in exact)  # type: ignore[index]


def _buckets(items: Sequence[_Item], exact_keys: Sequence[tuple[object, ...]],
             by_exact: dict[int, list[int]], level: Level) -> tuple[Bucket, ...]:
    """``by_exact``: exact key id -> indices into ``items``; equal exact keys are equal at every level."""
    groups: dict[tuple[object, ...], list[list[int]]] = defaultdict(list)
    for eid, idx in by_exact.items():
        groups[_coarser(exact_keys[eid], level)].append(idx)
    out = []
    for parts in groups.values():
        order = parts[0] if len(parts) == 1 else sorted(i for part in parts for i in part)
        group = [items[i] for i in order]
        first = group[0][1]
        # Go prints no minutes under one minute (0); debug=1 groups carry no state and no wait at all.
        waits = [it[1].wait_minutes or 0 for it in group if it[1].goroutine and it[1].state]
        cls = group[0][2]
        out.append(Bucket(
            level, sum(it[1].count for it in group),
            tuple(sorted({it[1].state for it in group})), first.frames,
            tuple(it[0] for it in group), cls, cls in SUSPECT_CLASSES,
            min(waits) if waits else None, max(waits) if waits else None,
        ))
    out.sort(key=lambda b: (-b.count, [str(f) for f in b.frames[:3]]))
    return _waited_on(out)


_FORWARD = ("run_batch", "forward_batch_generation", "ModelRunner.forward", "forward_extend",
            "forward_decode", "_forward_raw")


def _waited_on(buckets: list[Bucket]) -> tuple[Bucket, ...]:
    """When one thread is busy in a forward while others wait in a collective or for a peer,
    the busy one is what they wait on: it is the suspect, the waiters are not."""
    busy = [i for i, b in enumerate(buckets) if b.leaf_class == BUSY
            and any(any(k in f.function for k in _FORWARD) for f in b.frames)]
    waiting = [i for i, b in enumerate(buckets) if b.leaf_class in (COLLECTIVE, PEER_WAIT)]
    if not busy or not waiting:
        return tuple(buckets)
    return tuple(replace(b, suspect=True) if i in busy else
                 replace(b, suspect=False) if i in waiting else b for i, b in enumerate(buckets))


def _slot(t: ThreadStack) -> str:
    if t.name:
        return t.name
    root = t.frames[-1].function if t.frames else "?"
    return f"<{root}>"


def _stuck(procs: Sequence[_Proc]) -> list[StuckThread]:
    out = []
    for p in procs:
        if len(p.dumps) < 2:
            continue
        history = [{t.thread_id: t for t in ld.dump.threads} for ld in p.dumps]
        last = len(history) - 1
        for t in p.dumps[-1].dump.threads:
            if not t.frames or noise_reason(t) is not None:
                continue
            key = _level_key(t, "exact")
            first = last
            while first > 0:
                prev = history[first - 1].get(t.thread_id)
                if prev is None or _level_key(prev, "exact") != key:
                    break
                first -= 1
            if first == last:
                continue
            t0, t1 = p.times[first], p.times[last]
            span = t1 - t0 if t0 is not None and t1 is not None else None
            out.append(StuckThread(_member(p, t), t.frames, span, last - first + 1,
                                   classify_stack(t)[0]))
    return out


def _all_stuck(procs: Sequence[_Proc], stuck: Sequence[StuckThread]) -> list[AllStuck]:
    by_proc: dict[tuple[str, int | None, str], dict[tuple[str, str], tuple[Frame, str, float | None]]]
    by_proc = defaultdict(dict)
    for s in stuck:
        if s.leaf_class in IDLE_CLASSES:
            continue
        cls, frame = classify_stack(ThreadStack(s.member.thread_id, s.member.thread_name, "",
                                                s.frames))
        if frame is None:
            continue
        k = (s.member.host, s.member.pid, s.member.source)
        by_proc[k][(frame.function, frame.file)] = (frame, cls, s.stuck_for_s)
    groups: dict[tuple[str | None, str], list[_Proc]] = defaultdict(list)
    for p in procs:
        groups[(p.role, p.kind)].append(p)
    out = []
    for (role, kind), members in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if len(members) < 2:
            continue
        sets = [by_proc.get((p.host, p.pid, p.source), {}) for p in members]
        common = set(sets[0]).intersection(*sets[1:])
        for fkey in sorted(common):
            frame, cls, _ = sets[0][fkey]
            spans = [s[fkey][2] for s in sets]
            known = [x for x in spans if x is not None]
            ranks = tuple(sorted(p.rank or f"pid {p.pid}" for p in members))
            out.append(AllStuck(role, kind, frame, ranks, cls, min(known) if known else None))
    return out


def _group(dumps: Sequence[LabelledDump]) -> tuple[list[_Proc], list[DumpError]]:
    """Dumps by process identity (time-ordered where times are known), and the failures."""
    procs: dict[tuple[object, ...], _Proc] = {}
    errors: list[DumpError] = []
    for ld in dumps:
        d = ld.dump
        if d.error is not None:
            failure = classify_pyspy_error(d.error, 1)
            message = failure.message if failure is not None else (d.error.splitlines() or [""])[0]
            errors.append(DumpError(ld.host, d.pid, ld.rank or d.rank, ld.source, message,
                                    failure))
            continue
        key: tuple[object, ...] = (
            (ld.host, d.pid) if d.pid is not None else (ld.host, ld.source, d.kind, id(ld))
        )
        p = procs.get(key)
        if p is None:
            p = procs[key] = _Proc(key, ld)
        p.dumps.append(ld)
        p.times.append(ld.taken_at if ld.taken_at is not None else read_stamp(d.timestamp))
    for proc in procs.values():
        if all(t is not None for t in proc.times) and len(proc.times) > 1:
            order = sorted(range(len(proc.times)), key=lambda i: proc.times[i] or 0.0)
            proc.dumps = [proc.dumps[i] for i in order]
            proc.times = [proc.times[i] for i in order]
    return list(procs.values()), errors


def analyze_stacks(dumps: Sequence[LabelledDump]) -> StackReport:
    """Bucket, compare and time-diff dumps. The latest dump of each process is the snapshot."""
    plist, errors = _group(dumps)
    items: list[_Item] = []
    noise: Counter[str] = Counter()
    slots: dict[tuple[str | None, str, str], dict[tuple[object, ...], list[tuple[Member, ThreadStack]]]]
    slots = defaultdict(lambda: defaultdict(list))
    class_cache: dict[tuple[object, ...], str] = {}
    noise_cache: dict[tuple[bool, int], str | None] = {}
    exact_ids: dict[tuple[object, ...], int] = {}  # hash each stack once; caches key on the id
    long_waits = kept = 0
    noise_items: list[_Item] = []
    for p in plist:
        for t in p.dumps[-1].dump.threads:
            exact = exact_ids.setdefault(_level_key(t, "exact"), len(exact_ids))
            nk = (t.name is not None and t.name.startswith("Timer"), exact)
            reason = noise_cache.get(nk, "")
            if reason == "":
                reason = noise_cache[nk] = noise_reason(t)
            waited = t.goroutine and (t.wait_minutes or 0) >= 1
            long_waits += t.count if waited else 0
            if reason is not None:
                noise[reason] += t.count
                if waited:  # filtered, yet counted and shown: it has waited for minutes
                    kept += t.count
                    noise_items.append((_member(p, t), t, reason, exact))
                continue
            m = _member(p, t)
            ck = (t.state, t.goroutine, exact)
            cls = class_cache.get(ck)
            if cls is None:
                cls = class_cache[ck] = classify_stack(t)[0]
            items.append((m, t, cls, exact))
            if not t.goroutine:
                slots[(p.role, p.kind, _slot(t))][p.key].append((m, t))
    by_exact: dict[int, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        by_exact[it[3]].append(i)
    exact_keys = list(exact_ids)
    outliers: list[Outlier] = []
    for (role, kind, slot), per_proc in slots.items():
        entries = [v[0] for v in per_proc.values() if len(v) == 1]
        group = f"{role + ' ' if role else ''}{kind} {slot}"
        outliers.extend(find_outliers(group, entries))
    stuck = _stuck(plist)
    return StackReport(
        threads=sum(it[1].count for it in items),
        processes=len(plist),
        dumps=len(dumps),
        noise_filtered=sum(noise.values()),
        noise_by_reason=tuple(sorted(noise.items())),
        buckets=_buckets(items, exact_keys, by_exact, "exact"),
        buckets_any_line=_buckets(items, exact_keys, by_exact, "any_line"),
        buckets_function=_buckets(items, exact_keys, by_exact, "function"),
        outliers=tuple(outliers),
        stuck=tuple(stuck),
        all_stuck=tuple(_all_stuck(plist, stuck)),
        errors=tuple(errors),
        long_waits=long_waits,
        long_waits_unfiltered=kept,
        long_wait_noise=_noise_buckets(noise_items, exact_keys),
        crashes=tuple(_crash(d) for d in dumps if d.dump.crash),
    )


def _crash(d: LabelledDump) -> str:
    """A faulthandler crash: what killed the process, and the thread that was running."""
    cur = next((t for t in d.dump.threads if t.current), None)
    where = (f" in the current thread {cur.thread_id} at {blocked_frame(cur)}" if cur is not None
             else "")
    return f"{d.host or d.source}: Fatal Python error: {d.dump.crash}{where}"


def _noise_buckets(items: Sequence[_Item], exact_keys: Sequence[tuple[object, ...]]
                   ) -> tuple[Bucket, ...]:
    """Buckets of noise goroutines that waited >= 1 minute (their class is the noise reason)."""
    by_exact: dict[int, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        by_exact[it[3]].append(i)
    return _buckets(items, exact_keys, by_exact, "exact")


def all_stuck(report: StackReport, role: str | None = None) -> tuple[AllStuck, ...]:
    """Rules-engine helper: roles whose every rank sits unmoved in one non-idle frame."""
    return tuple(a for a in report.all_stuck if role is None or a.role == role)


# --- output ---------------------------------------------------------------------------


def _member_json(m: Member) -> dict[str, object]:
    return {"host": m.host, "pid": m.pid, "rank": m.rank, "thread_id": m.thread_id,
            "thread_name": m.thread_name, "role": m.role, "kind": m.kind, "source": m.source,
            "label": m.label()}


def _bucket_json(b: Bucket) -> dict[str, object]:
    out: dict[str, object] = {
        "count": b.count, "state": ",".join(b.states), "frames": [str(f) for f in b.frames],
        "members": [_member_json(m) for m in b.members], "leaf_class": b.leaf_class,
        "suspect": b.suspect, "level": b.level,
    }
    if b.wait_min is not None:
        out["wait_minutes"] = {"min": b.wait_min, "max": b.wait_max}
    return out


def _frame_str(f: Frame | None) -> str | None:
    return str(f) if f is not None else None


def stacks_json(report: StackReport) -> dict[str, object]:
    """JSON-ready dict: threads, buckets (exact), outliers, and the rest."""
    return {
        "threads": report.threads,
        "processes": report.processes,
        "dumps": report.dumps,
        "noise_filtered": report.noise_filtered,
        "noise_by_reason": dict(report.noise_by_reason),
        "crashes": list(report.crashes),
        "long_waits": report.long_waits,
        "long_waits_unfiltered": report.long_waits_unfiltered,
        "long_wait_noise": [_bucket_json(b) for b in report.long_wait_noise],
        "buckets": [_bucket_json(b) for b in report.buckets],
        "buckets_any_line": [_bucket_json(b) for b in report.buckets_any_line],
        "buckets_function": [_bucket_json(b) for b in report.buckets_function],
        "outliers": [
            {"member": _member_json(o.member), "diverges_at": _frame_str(o.diverges_at),
             "reason": o.reason, "group": o.group, "common": _frame_str(o.common),
             "majority_frame": _frame_str(o.majority_frame), "majority": o.majority,
             "group_size": o.group_size, "leaf_class": o.leaf_class}
            for o in report.outliers
        ],
        "stuck": [
            {"member": _member_json(s.member), "stuck_for_s": s.stuck_for_s, "dumps": s.dumps,
             "leaf_class": s.leaf_class, "frames": [str(f) for f in s.frames]}
            for s in report.stuck
        ],
        "all_stuck": [
            {"role": a.role, "kind": a.kind, "frame": str(a.frame), "ranks": list(a.ranks),
             "leaf_class": a.leaf_class, "stuck_for_s": a.stuck_for_s}
            for a in report.all_stuck
        ],
        "errors": [
            {"host": e.host, "pid": e.pid, "rank": e.rank, "source": e.source,
             "message": e.message, "reason": e.failure.reason if e.failure else None,
             "fix": e.failure.fix if e.failure else None}
            for e in report.errors
        ],
    }


def _compress(members: Sequence[Member], limit: int = 6) -> str:
    labels = sorted({m.rank or m.label() for m in members})
    more = f" +{len(labels) - limit} more" if len(labels) > limit else ""
    return ", ".join(labels[:limit]) + more


def _wait_text(b: Bucket) -> str:
    """How long a bucket's goroutines wait: a range, "< 1 min" (Go prints no minutes under
    one), or "duration unknown" (a debug=1 dump carries no wait time)."""
    if b.wait_min is None:
        go = any(f.file.endswith((".go", ".s")) for f in b.frames)
        return ", wait duration unknown (the dump prints none)" if go and not any(b.states) else ""
    if b.wait_max == 0:
        return ", waiting < 1 min"
    return (f", waiting {b.wait_min} min" if b.wait_min == b.wait_max
            else f", waiting {b.wait_min}~{b.wait_max} min")


def format_stacks_text(report: StackReport, max_buckets: int = 15, max_frames: int = 12) -> str:
    """Terminal summary: largest buckets, outliers, stuck threads, failures."""
    noise = ", ".join(f"{k} {v}" for k, v in report.noise_by_reason)
    read = report.threads + report.noise_filtered
    lines = [f"{read} threads in {report.processes} processes from {report.dumps} dumps; "
             f"{report.noise_filtered} filtered as noise" + (f" ({noise})" if noise else "")
             + f", {report.threads} analysed"]
    lines.extend(f"CRASHED: {c}" for c in report.crashes)
    if report.long_waits:
        lines.append(f"{report.long_waits} goroutines have waited >= 1 minute"
                     + (f", {report.long_waits_unfiltered} of them filtered as noise (shown below)"
                        if report.long_waits_unfiltered else ""))
    for a in report.all_stuck:
        span = f" for >= {a.stuck_for_s:.0f}s" if a.stuck_for_s is not None else ""
        lines.append(f"ALL STUCK: every {a.role or ''} {a.kind} rank ({', '.join(a.ranks)}) sits "
                     f"in {a.frame} [{a.leaf_class}]{span}")
    if report.outliers:
        lines.append("")
        lines.append("Outliers:")
        for o in report.outliers:
            lines.append(f"  {o.member.label()}: diverges at {o.diverges_at}")
            lines.append(f"    {o.reason}")
    lines.append("")
    lines.append("Buckets (identical stacks, exact lines):")
    for b in report.buckets[:max_buckets]:
        flag = " SUSPECT" if b.suspect else ""
        lines.append(f"  {b.count} x [{','.join(b.states) or '-'}] {b.leaf_class}{flag}"
                     f"{_wait_text(b)}: {_compress(b.members)}")
        if b.leaf_class in CLASS_MEANING:
            lines.append(f"      ({CLASS_MEANING[b.leaf_class]})")
        for f in b.frames[:max_frames]:
            lines.append(f"      {f}")
        if len(b.frames) > max_frames:
            lines.append(f"      ... {len(b.frames) - max_frames} more frames")
    if len(report.buckets) > max_buckets:
        lines.append(f"  ... {len(report.buckets) - max_buckets} more buckets")
    if report.long_wait_noise:
        lines.append("")
        lines.append("Filtered as noise, yet waiting >= 1 minute:")
        for b in report.long_wait_noise[:max_buckets]:
            lines.append(f"  {b.count} x [{','.join(b.states)}] {b.leaf_class}, waiting "
                         f"{b.wait_min}~{b.wait_max} min: {b.frames[0] if b.frames else '?'}")
    moving = [s for s in report.stuck if s.leaf_class not in IDLE_CLASSES]
    if report.stuck:
        lines.append("")
        lines.append(f"Unchanged between dumps: {len(report.stuck)} threads "
                     f"({len(report.stuck) - len(moving)} waiting for work)")
        for s in moving[:20]:
            span = f">= {s.stuck_for_s:.0f}s" if s.stuck_for_s is not None else "interval unknown"
            leaf = s.frames[0] if s.frames else None
            lines.append(f"  {s.member.label()}: {leaf} [{s.leaf_class}] {span}, "
                         f"{s.dumps} dumps")
    if report.errors:
        lines.append("")
        lines.append("Dumps that failed:")
        for e in report.errors:
            cause = f" [{e.failure.reason}]" if e.failure else ""
            fix = f"\n    fix: {e.failure.fix}" if e.failure else ""
            lines.append(f"  {e.host or e.source}:{e.pid}:{cause} {e.message}{fix}")
    return "\n".join(lines) + "\n"
