"""Is a capture complete? Which failed results are gaps, which are evidence, which are
expected absences.

Partial means the capture failed, not the cluster: a capture is partial when the tool could
not collect something (a host unreachable, a command that timed out, was refused or not
found, a channel that failed, the deadline). A server that accepted a request and never
answered it (``/server_info`` or ``/health_generate`` on a wedged scheduler) is evidence about
the server, which the analysis reports as a finding: it is listed as *hung*, not as a gap. An
expected absence is not a gap either: nvidia-smi on a host without a GPU (the router's host)
says "No devices were found", or is not installed at all.
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


#: what curl (stderr) or the SSH forward (error) says when the port could not be reached at
#: all: the tool's gap, not a hang
_NO_CONNECTION = ("onnection timed out", "Failed to connect", "Could not resolve", "onnection refused",
                  "timed out connecting", "cannot connect", "timed out opening a channel")


def server_hung(entry: ResultEntry) -> bool:
    """An HTTP endpoint that took the connection and did not answer within its timeout: the
    server's state (evidence the analysis reports), not something the tool failed to do."""
    if not entry.url or not entry.timed_out or (entry.error or "").startswith(_COUNTED_ELSEWHERE):
        return False
    said = f"{entry.stderr} {entry.error or ''}"
    return not any(t in said for t in _NO_CONNECTION)


def failed_to_collect(entry: ResultEntry) -> str | None:
    """Why this result is missing evidence (timed out, could not run), or None (also for an
    endpoint that hung: that is evidence, see server_hung)."""
    if entry.source == "connect" or (entry.error or "").startswith(_COUNTED_ELSEWHERE):
        return None
    if server_hung(entry):
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
