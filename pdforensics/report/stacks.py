"""Stacks: buckets largest first, members, outlier ranks with where they diverge."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.analysis.stacks import analyze_stacks
from pdforensics.analysis.stacks_classify import IDLE_CLASSES
from pdforensics.analysis.stacks_model import Bucket, LabelledDump
from pdforensics.report.common import dur
from pdforensics.report.log_stacks import LogStackRow, log_stack_rows
from pdforensics.views.loaded import LoadedCapture

MAX_FRAMES = 40
MAX_BUCKETS = 200


@dataclass(frozen=True)
class BucketView:
    count: int
    state: str
    leaf: str
    frames: tuple[str, ...]
    more_frames: int
    members: tuple[str, ...]
    leaf_class: str
    suspect: bool
    outlier: bool  # holds an outlier rank
    roles: str


@dataclass(frozen=True)
class OutlierView:
    member: str
    group: str
    diverges_at: str
    common: str
    majority_frame: str
    majority: str
    reason: str


@dataclass(frozen=True)
class StacksView:
    summary: str
    buckets: tuple[BucketView, ...]
    hidden_buckets: int
    outliers: tuple[OutlierView, ...]
    all_stuck: tuple[str, ...]
    stuck: tuple[str, ...]
    failures: tuple[tuple[str, str, str], ...]  # (who, message, fix)
    from_logs: tuple[LogStackRow, ...] = ()  # SGLang's own dumps in its logs, newest first


def _dumps(capture: LoadedCapture) -> tuple[list[LabelledDump], list[tuple[str, str, str]]]:
    dumps: list[LabelledDump] = []
    failures: list[tuple[str, str, str]] = []
    for s in capture.services():
        for p in s.processes:
            who = f"{s.host} {s.role} pid {p.info.pid} {p.info.rank or p.info.kind}"
            for st in p.stacks:
                if st.failure is not None:
                    failures.append((who, st.failure.message or st.error or st.failure.reason,
                                     st.failure.fix))
                elif st.timed_out or (st.error and not st.dumps):
                    failures.append((who, st.error or "py-spy timed out",
                                     "run py-spy with --nonblocking; check the process state"))
                for d in st.dumps:
                    dumps.append(LabelledDump(dump=d, host=s.host, role=s.role,
                                              rank=p.info.rank, taken_at=st.taken_at,
                                              source=st.key, kind="scheduler"
                                              if p.info.kind == "scheduler" else None))
    return dumps, failures


def _bucket(b: Bucket, outlier_keys: set[tuple[str, int | None, str]]) -> BucketView:
    members = tuple(m.label() for m in b.members)
    is_out = any((m.host, m.pid, m.thread_id) in outlier_keys for m in b.members)
    roles = ", ".join(sorted({m.role or "?" for m in b.members}))
    return BucketView(count=b.count, state=",".join(b.states), leaf=str(b.frames[0]) if b.frames
                      else "(no frames)", frames=tuple(str(f) for f in b.frames[:MAX_FRAMES]),
                      more_frames=max(0, len(b.frames) - MAX_FRAMES), members=members,
                      leaf_class=b.leaf_class, suspect=b.suspect, outlier=is_out, roles=roles)


def _bucket_order(b: Bucket) -> tuple[bool, bool, int]:
    """Stuck work before idle threads (a queue wait, the idle loop, a sleep), then the
    suspect ones, then the largest: the bucket that explains a wedge is never below idle."""
    return (b.leaf_class in IDLE_CLASSES, not b.suspect, -b.count)


def build_stacks(capture: LoadedCapture) -> tuple[StacksView | None, list[str]]:
    dumps, failures = _dumps(capture)
    missing: list[str] = []
    from_logs = log_stack_rows(capture)
    if not dumps and not failures and from_logs:
        return StacksView(summary="no py-spy dumps in this capture; the stacks below are the "
                          "ones SGLang wrote into its logs", buckets=(), hidden_buckets=0,
                          outliers=(), all_stuck=(), stuck=(), failures=(),
                          from_logs=from_logs), missing
    if not dumps and not failures:
        missing.append("no stack dumps in this capture (py-spy not run: stacks off, "
                       "no processes found, or the deadline came first)")
        return None, missing
    rep = analyze_stacks(dumps)
    okeys = {(o.member.host, o.member.pid, o.member.thread_id) for o in rep.outliers}
    ordered = sorted(rep.buckets, key=_bucket_order)
    buckets = tuple(_bucket(b, okeys) for b in ordered[:MAX_BUCKETS])
    outliers = tuple(OutlierView(
        member=o.member.label(), group=o.group, diverges_at=str(o.diverges_at or "—"),
        common=str(o.common or "—"), majority_frame=str(o.majority_frame or "—"),
        majority=f"{o.majority} of {o.group_size}", reason=o.reason) for o in rep.outliers)
    all_stuck = tuple(
        f"{a.role or '?'} {a.kind}: ranks {', '.join(a.ranks)} all in {a.frame} "
        f"({a.leaf_class}{', unchanged for ' + dur(a.stuck_for_s) if a.stuck_for_s else ''})"
        for a in rep.all_stuck)
    stuck = tuple(f"{s.member.label()}: {s.frames[0] if s.frames else '?'} unchanged over "
                  f"{s.dumps} dumps" + (f" ({dur(s.stuck_for_s)})" if s.stuck_for_s else "")
                  for s in rep.stuck if s.leaf_class not in ("idle",))
    summary = (f"{rep.threads} threads in {rep.processes} processes from {rep.dumps} dumps; "
               f"{len(rep.buckets)} distinct stacks; {rep.noise_filtered} idle helper threads "
               f"filtered")
    if failures:
        missing.append(f"{len(failures)} py-spy runs failed (listed below with the fix)")
    return StacksView(summary=summary, buckets=buckets,
                      hidden_buckets=max(0, len(ordered) - MAX_BUCKETS), outliers=outliers,
                      all_stuck=all_stuck, stuck=stuck, failures=tuple(failures),
                      from_logs=from_logs), missing
