"""The `stacks` command's core: load files leniently, analyse, print, pick the exit code."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from pdforensics.analysis.stacks import analyze_stacks, format_stacks_text, stacks_json
from pdforensics.analysis.stacks_load import load_stack_files_lenient
from pdforensics.analysis.stacks_model import StackReport
from pdforensics.errors import ExitStatus

Echo = Callable[..., None]


def run_stacks(paths: Sequence[str], as_json: bool, echo: Echo) -> int:
    """Analyse every readable file; the exit code says what was skipped.

    0: all files read; 3: some file skipped (each reported on stderr); 1: no file gave a
    thread (a file with only py-spy failures still prints them, with their causes and fixes).
    """
    loaded = load_stack_files_lenient(paths)
    for path, reason in loaded.skipped:
        echo(f"pdforensics: error: {reason}" if len(paths) == 1 else f"skipped {path}: {reason}",
             err=True)
    report = analyze_stacks(loaded.dumps)
    threads = any(d.dump.threads for d in loaded.dumps)
    if as_json and loaded.dumps:
        echo(json.dumps(stacks_json(report), indent=1))
    elif threads:
        echo(format_stacks_text(report))
    elif report.errors:
        echo(_failures_text(report))
    for d in loaded.dumps:
        if d.dump.truncated:
            echo(f"note: {d.source} ends mid-line (cut short); its last line was dropped", err=True)
    if not threads:
        if loaded.dumps:  # only py-spy failures: printed above with their causes and fixes
            names = ", ".join(sorted({d.source for d in loaded.dumps}))
            echo(f"pdforensics: error: {names}: no thread, py-spy failed (cause above)", err=True)
        elif len(paths) > 1:
            echo("pdforensics: error: no file held a stack dump", err=True)
        return ExitStatus.ERROR
    return ExitStatus.PARTIAL if loaded.skipped else ExitStatus.OK


def _failures_text(report: StackReport) -> str:
    """Only py-spy failures: each with its cause and fix (no empty bucket list)."""
    lines = [f"py-spy failed ({len(report.errors)} dump(s)), no thread to analyse:"]
    for e in report.errors:
        where = f"{e.host or e.source}" + (f" pid {e.pid}" if e.pid is not None else "")
        where += f" {e.rank}" if e.rank else ""
        if e.failure is None:
            lines.append(f"  {where}: {e.message}")
            continue
        lines.append(f"  {where}: {e.failure.reason}: {e.message}")
        lines.append(f"    fix: {e.failure.fix}")
    return "\n".join(lines) + "\n"
