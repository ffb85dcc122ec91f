"""`snapshot`: a light capture, finished like any capture and filed into the store, then
retention; one run at a time."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from pdforensics.app.finish import finish_bundle
from pdforensics.capture.host_run import Progress
from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.collectors.base import Source
from pdforensics.doctor.model import DoctorReport
from pdforensics.errors import Interrupted
from pdforensics.model import ClusterSpec
from pdforensics.store.filing import Verdict, file_into
from pdforensics.store.index import Snapshot, StoreError, open_index
from pdforensics.store.lock import store_lock
from pdforensics.store.retention import RetentionPolicy, prune


@dataclass(frozen=True)
class SnapshotOptions:
    """The snapshot profile: lighter than `capture` (no stacks unless asked, 2 samples)."""

    samples: int = 2
    interval_s: float = 1.5
    stacks: bool = False
    stack_dumps: int = 1
    probes: bool = True  # /health_generate on every server
    deadline_s: float = 60.0
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
        capture = CaptureOptions(
            out_dir=index.bundles, deadline_s=options.deadline_s, profile="snapshot",
            accept_new_host_keys=cluster.accept_new_host_keys,
            plan=PlanOptions(samples=max(1, options.samples), interval_s=options.interval_s,
                             stacks=options.stacks, stack_dumps=options.stack_dumps,
                             probes=options.probes,
                             extra_host_sources=_doctor_probes(options.doctor)))
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


def _doctor_probes(on: bool) -> tuple[Source, ...]:
    from pdforensics.doctor.probes import PROBES

    return PROBES if on else ()


def _doctor(bundle: Path, cluster: ClusterSpec, store: Path) -> DoctorReport:
    """doctor's checks over the snapshot's own bundle, kept in it (doctor.json) for `diff`."""
    from pdforensics.doctor.run import evaluate
    from pdforensics.doctor.stored import write_doctor

    report = evaluate(bundle, cluster, (store,))
    write_doctor(bundle, report)
    return report
