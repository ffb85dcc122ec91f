"""`snapshot`: a light capture, finished like any capture and filed into the store, then
retention; one run at a time."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from pdforensics.app.finish import finish_bundle
from pdforensics.app.targets import Where
from pdforensics.capture.host_run import Progress
from pdforensics.capture.profiles import PROFILES, Collect
from pdforensics.capture.run import run_capture
from pdforensics.doctor.model import DoctorReport
from pdforensics.errors import Interrupted
from pdforensics.model import ClusterSpec
from pdforensics.store.filing import Verdict, file_into
from pdforensics.store.index import Snapshot, StoreError, open_index
from pdforensics.store.lock import store_lock
from pdforensics.store.retention import RetentionPolicy, prune


@dataclass(frozen=True)
class SnapshotOptions:
    """A snapshot: the snapshot profile (capture/profiles.py: lighter than `capture`, no stacks
    unless asked, 2 samples) as the flags changed it, retention and what else to keep."""

    collect: Collect = PROFILES["snapshot"].defaults
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    keep_env: tuple[str, ...] = ()  # --keep-env: more env vars/flags whose values stay readable
    doctor: bool = False  # --doctor: also run doctor's probes and keep its checks (doctor.json)


@dataclass(frozen=True)
class SnapshotOutcome:
    snapshot: Snapshot
    verdict: Verdict
    capture_status: str
    partial_reasons: tuple[str, ...]
    pruned: tuple[str, ...]
    duration_s: float
    readiness: str | None = None  # doctor's one-line summary (--doctor)
    ready: bool | None = None

    @property
    def healthy(self) -> bool:
        return self.verdict.verdict == "HEALTHY"


def take_snapshot(cluster: ClusterSpec, store: Path, options: SnapshotOptions,
                  progress: Progress | None = None) -> SnapshotOutcome:
    """Capture into `<store>/bundles`, index it, prune. Raises StoreBusy when another runs."""
    t0 = time.monotonic()
    with store_lock(store), open_index(store) as index:
        capture = PROFILES["snapshot"].options(index.bundles, options.collect,
                                               accept_new_host_keys=cluster.accept_new_host_keys,
                                               doctor=options.doctor)
        try:
            from pdforensics.redact.redactor import Allowlist, Redactor
            from pdforensics.store.learned import load_learned, save_learned

            redactor = Redactor(allow=Allowlist.with_extra(options.keep_env))
            key_id = str(redactor.describe()["key_id"])
            redactor.remember(load_learned(store, key_id))  # what earlier snapshots learned
            try:
                outcome = run_capture(cluster, capture, progress=progress, redactor=redactor)
            finally:
                save_learned(store, key_id, redactor.learned_markers())
        except Interrupted as exc:
            if exc.bundle:  # keep what was gathered: a partial snapshot is still evidence
                file_into(index, Path(exc.bundle), "snapshot")
            raise
        readiness = _doctor(outcome.bundle, cluster, store) if options.doctor else None
        done = finish_bundle(outcome.bundle, index=index, origin="snapshot")
        if done.filing is None or done.filing.snapshot is None:  # file_into raises first
            raise StoreError(f"{outcome.bundle}: not filed into {store}")
        snap = done.filing.snapshot
        verdict = (Verdict(done.analysis.verdict, done.analysis.summary or None, None)
                   if done.analysis is not None else
                   Verdict(None, None, "; ".join(done.warnings) or "no analysis"))
        pruned = prune(index, options.retention, now=time.time(), cluster=snap.cluster)
    return SnapshotOutcome(snapshot=snap, verdict=verdict, capture_status=outcome.status,
                           partial_reasons=outcome.partial_reasons,
                           pruned=tuple(s.name for s in pruned),
                           duration_s=time.monotonic() - t0,
                           readiness=readiness.summary() if readiness else None,
                           ready=readiness.ready if readiness else None)


def _doctor(bundle: Path, cluster: ClusterSpec, store: Path) -> DoctorReport:
    """doctor's checks over the snapshot's own bundle, kept in it (doctor.json) for `diff`."""
    from pdforensics.doctor.run import evaluate
    from pdforensics.doctor.stored import write_doctor

    report = evaluate(bundle, cluster, (store,))
    write_doctor(bundle, report)
    return report


def snapshot_of(where: Where, store: str | None, collect: Collect, keep_last: int | None = None,
                keep_days: int | None = None, keep_env: tuple[str, ...] = (),
                doctor: bool = False) -> SnapshotOutcome:
    """The `snapshot` command: the targets (the cluster file, else this machine; a Slurm job),
    its store (--store, else the cluster file's, else the user data dir), retention from the
    flags or the cluster file, then take_snapshot."""
    from pdforensics.app.targets import resolve
    from pdforensics.store.paths import store_for

    cluster = resolve(where, collect.deadline_s, pods=False).cluster
    policy = RetentionPolicy.from_settings(keep_last, keep_days, dict(cluster.extra))
    options = SnapshotOptions(collect=collect, retention=policy, keep_env=keep_env, doctor=doctor)
    return take_snapshot(cluster, store_for(cluster, store), options)
