"""SGLang's own stack dumps from its logs, attributed to the ranks they belong to.

The scheduler watchdog (and the soft watchdog) log ``Pyspy dump for PID N`` under the rank's
``[time TPn]`` prefix; a dump is given to the process with that pid, else to the process of
that rank (a restarted server has new pids), else to the service. Their time is the log
line's, so a wedge that happened an hour before the capture still has stacks.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.stacks_model import LabelledDump
from pdforensics.parsers.frames import ProcessDump
from pdforensics.parsers.logtime import read_stamp
from pdforensics.views.hostclock import to_capture_clock
from pdforensics.views.loaded import LoadedCapture, ProcessView, ServiceView


def owner(svc: ServiceView, d: ProcessDump) -> ProcessView | None:
    """The process a dump belongs to: by pid, else by the rank its log prefix names."""
    by_pid = next((p for p in svc.processes if d.pid is not None and p.info.pid == d.pid), None)
    if by_pid is not None or not d.rank:
        return by_pid
    return next((p for p in svc.processes if p.info.rank == d.rank), None)


def log_dumps(capture: LoadedCapture, offsets: dict[str, float] | None = None
              ) -> Iterator[LabelledDump]:
    """Every harvested log dump as a LabelledDump (source ``log:<journal|log_file>``); its
    time is put on our clock by the host's offset (hostclock.to_capture_clock; ``offsets``,
    host -> seconds, overrides the offsets measured at capture)."""
    if offsets is None:
        offsets = {h.name: h.clock_offset_s for h in capture.hosts if h.clock_offset_s is not None}
    for svc in capture.services():
        for d in svc.log_stacks:
            p = owner(svc, d)
            yield LabelledDump(
                d, host=svc.host, role=svc.role,
                rank=(p.info.rank if p is not None else None) or d.rank,
                taken_at=to_capture_clock(read_stamp(d.timestamp), offsets.get(svc.host)),
                source=f"log:{svc.log_source or 'log'}",
                kind="scheduler" if p is not None and p.info.kind == "scheduler" else None)
