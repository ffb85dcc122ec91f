"""Is a capture complete? Which failed results are gaps, and which are expected absences.

A capture is partial whenever a planned source timed out or could not run (an endpoint that
refused, a command that was not found, a channel that failed), not only when a host was
unreachable. An expected absence is not a gap: nvidia-smi on a host without a GPU (the
router's host) says "No devices were found", or is not installed at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.collectors import REGISTRY

#: the first partial reason of a capture in which no host could be reached
NOTHING_COLLECTED = "nothing collected: no host could be reached"
#: exit statuses of a shell that could not start the command
_NOT_RUNNABLE = (126, 127)
#: results already reported elsewhere: the host's connect error, the "not run" rows
_COUNTED_ELSEWHERE = ("not run:",)


def is_expected_absence(entry: ResultEntry, bundle: Path | None = None) -> bool:
    """A source whose declaration allows the host to lack what it reads (`Source.absent`:
    nvidia-smi on a host without a GPU) answered so, or its tool could not run."""
    source = REGISTRY.get(entry.source)
    absent = source.absent if source is not None else None
    if absent is None:
        return False
    if entry.exit_status in _NOT_RUNNABLE:
        return True
    text = entry.stderr
    if bundle is not None and entry.path:
        try:
            text += (bundle / entry.path).read_bytes()[:4096].decode("utf-8", "replace")
        except OSError:
            pass
    return entry.exit_status == absent.exit_status and any(t in text for t in absent.texts)


def failed_to_collect(entry: ResultEntry) -> str | None:
    """Why this result is missing evidence (timed out, could not run), or None."""
    if entry.source == "connect" or (entry.error or "").startswith(_COUNTED_ELSEWHERE):
        return None
    if entry.timed_out:
        return "timed out"
    if entry.error:
        return entry.error
    if entry.exit_status in _NOT_RUNNABLE:
        said = entry.stderr.strip().splitlines()[-1][:160] if entry.stderr.strip() else ""
        return f"could not run: {said or f'exit status {entry.exit_status}'}"
    if entry.url and entry.exit_status not in (0, None):  # curl on the host: no response
        return f"endpoint failed (exit status {entry.exit_status})"
    return None


def collection_reasons(entries: Iterable[ResultEntry], bundle: Path | None = None,
                       unreachable: Sequence[str] = ()) -> list[str]:
    """One partial reason per host: the sources that timed out or could not run."""
    by_host: dict[str, list[str]] = {}
    for e in entries:
        if e.host in unreachable or is_expected_absence(e, bundle):
            continue
        why = failed_to_collect(e)
        if why is not None:
            by_host.setdefault(e.host, []).append(f"{e.key} ({why})")
    reasons = []
    for host, rows in by_host.items():
        shown = ", ".join(rows[:4]) + (f" and {len(rows) - 4} more" if len(rows) > 4 else "")
        reasons.append(f"{host}: {len(rows)} source(s) timed out or could not run: {shown}")
    return reasons
