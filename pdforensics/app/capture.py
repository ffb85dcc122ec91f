"""`capture`: resolve the targets, take the capture (full profile), finish it (analysis,
report, store) and describe it in one JSON document the command prints."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.app.targets import Targets, Where, resolve
from pdforensics.capture.profiles import PROFILES, Collect
from pdforensics.capture.run import CaptureOutcome
from pdforensics.views.window import Since

PREWARM_AFTER_S = 3.0  # a capture's first seconds: connections, discovery, first py-spy dumps

Say = Callable[[str], None]


@dataclass(frozen=True)
class CaptureRequest:
    """Everything `capture` was asked for beyond the targets and the profile's options."""

    out_dir: Path
    collect: Collect
    archive: bool = False
    request_log_s: float | None = None  # --request-log: request logging on for this long
    sglang_source: bool = False  # --with-sglang-source
    prometheus: str | None = None  # also store Prometheus's history of the key PD series
    history_s: float = 7200.0
    client_dumps: tuple[str, ...] = ()
    redact: bool = True  # False: --no-redact (the manifest says so)
    keep_env: tuple[str, ...] = ()
    markdown_file: str | None = None  # also write the Markdown summary here (- for stdout)
    progress: bool = True  # the live progress on stderr (off with -q)
    since: Since | None = None  # --since: where the evidence window starts
    nccl_ras: bool = False  # --nccl-ras: query NCCL RAS on each host where it is enabled
    deep: bool = False  # --deep: cuda-gdb on each rank (stops each rank while it reads)


@dataclass(frozen=True)
class Captured:
    """A finished capture: the outcome, and the document `capture` prints (text or --json)."""

    outcome: CaptureOutcome
    doc: dict[str, Any]
    closing: tuple[str, ...] = ()  # lines for stderr after the result (warnings, errors)


def take_capture(where: Where, request: CaptureRequest, warn: Say) -> Captured:
    """The `capture` command's workflow; warnings and notes (whole lines) go to ``warn``."""
    from pdforensics.capture.request_log import check_window

    check_window(request.request_log_s, request.collect.deadline_s)
    targets = resolve(where, request.collect.deadline_s)
    from pdforensics.redact.redactor import NO_REDACT_WARNING

    if not request.redact:
        warn(NO_REDACT_WARNING)
    if request.collect.samples == 1:
        warn("pdforensics: note: --samples 1 takes one /metrics sample: frozen counters need two, "
             "so this capture cannot show a wedge (its verdict is at most DEGRADED)")
    from pdforensics.capture.recover import unfinished_notice

    if (notice := unfinished_notice(request.out_dir)) is not None:
        warn(notice)
    outcome = _run(targets, request)
    doc = finished_doc(outcome, targets, request.markdown_file, warn, request.archive)
    doc["samples"] = request.collect.samples
    closing = ((NO_REDACT_WARNING,) if not request.redact else ()) + tuple(
        f"pdforensics: error: {line}" for line in outcome.request_log_left_on)
    return Captured(outcome, doc, closing)


def _run(targets: Targets, request: CaptureRequest) -> CaptureOutcome:
    from pdforensics.analysis.client_dumps import client_dump_sidecars
    from pdforensics.capture.progress import terminal_progress
    from pdforensics.capture.run import run_capture
    from pdforensics.prometheus.history import sidecars_for
    from pdforensics.redact.redactor import Allowlist, NoRedactor, Redactor

    options = PROFILES["full"].options(
        request.out_dir, request.collect, archive=request.archive, since=request.since,
        accept_new_host_keys=targets.accept_new_host_keys,
        sglang_source=request.sglang_source, request_log_s=request.request_log_s or 0.0,
        nccl_ras=request.nccl_ras, deep=request.deep)
    cluster = targets.cluster
    progress = terminal_progress([h.name for h in cluster.hosts], options.deadline_s,
                                 not request.progress)
    threading.Thread(target=_prewarm, daemon=True, name="prewarm").start()
    try:
        return run_capture(cluster, options, progress=progress,
                           redactor=Redactor(allow=Allowlist.with_extra(request.keep_env))
                           if request.redact else NoRedactor(),
                           sidecars=[*sidecars_for(request.prometheus, request.history_s),
                                     *client_dump_sidecars(request.client_dumps), *targets.sidecars],
                           extra_manifest=targets.extra_manifest)
    finally:
        if progress is not None:
            progress.close()


def finished_doc(outcome: CaptureOutcome, targets: Targets, markdown_file: str | None,
                 warn: Say, archive: bool = False) -> dict[str, Any]:
    """finish.py's pipeline (analyze, report, archive, store), the Markdown summary when
    asked for, and the capture's JSON document."""
    from pdforensics.analysis.result_json import analysis_json
    from pdforensics.app.finish import finish_bundle
    from pdforensics.capture.run import outcome_json
    from pdforensics.store.filing import configured_store

    done = finish_bundle(outcome.bundle, store=configured_store(targets.cluster), archive=archive)
    for warning in done.warnings:
        warn(f"pdforensics: warning: {warning}")
    doc = outcome_json(outcome)
    doc["archive"] = str(done.archive) if done.archive else None
    doc["collected"] = any(h.reachable for h in outcome.hosts)
    full = analysis_json(done.analysis) if done.analysis else {}
    doc["verdict"] = done.analysis.verdict if done.analysis else None
    for key in ("since", "mitigate", "diagnose", "window"):
        doc[key] = full.get(key)
    doc["findings"] = full.get("findings", [])
    doc["stuck_since"] = doc["since"]["at"] if doc["since"] else None  # its older name
    doc["report"] = str(done.report) if done.report else None
    doc["stored"] = done.filing.as_json() if done.filing else None
    if markdown_file and done.analysis is None:
        warn("pdforensics: warning: no analysis, so no Markdown summary")
    elif markdown_file and done.analysis is not None:
        from pdforensics.analysis.summary_md import write_markdown

        write_markdown(markdown_file, done.analysis, outcome.bundle, done.report)
    return doc


def _prewarm() -> None:
    """Import the analysis and the report and compile the report's template (about 0.6 s) while
    the capture waits on its hosts, so the wall after the last result is only their work. It
    waits out the busy start first (connections, login shells, discovery, first py-spy dumps):
    there it would only take the interpreter lock from the connections that set when the
    capture can end."""
    time.sleep(PREWARM_AFTER_S)
    try:
        import pdforensics.app.finish  # noqa: F401
        from pdforensics.report.page import warm

        warm()
    except Exception:  # noqa: BLE001  # the real import after the capture says what is wrong
        pass
