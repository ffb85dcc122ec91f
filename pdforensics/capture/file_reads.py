"""A host's file reads during a capture: through the transport (no shell) where it can, the
source's command where it cannot; each fallback said once per host."""

from __future__ import annotations

import threading

from pdforensics.capture.batch_reads import batch_argv, split_result
from pdforensics.collectors.base import Job
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.banner import strip_banner
from pdforensics.transport.base import Transport
from pdforensics.transport.file_read import permission_denied


class FileReads:
    """Decides, per file-read job, whether the transport reads it or its command runs."""

    def __init__(self, host: HostSpec, notes: list[str] | None = None):
        self.host = host
        self.fallbacks: list[str] = []  # host-level notes, one per kind of fallback
        self._notes = notes  # also said among the host's discovery notes (the report shows them)
        self._said: set[str] = set()
        self._lock = threading.Lock()
        self._trying: dict[str, int] = {}  # source -> reads of it under way
        self._parked: dict[str, list[Job]] = {}  # source -> reads that need its command

    def read(self, transport: Transport, job: Job, timeout_s: float
             ) -> tuple[CommandResult | None, list[Job]]:
        """(result, due). result: the file's bytes, or None when the command must read it
        instead: the transport cannot read files (no SFTP subsystem), or the login user may not
        read this one and the host's privileged reads go through `sudo -n`. A plain read that
        needs its command waits (parked) for the other reads of its source under way, so the
        last of them to end gets them all in `due`: one command for them all (run_batch). A
        tail read that needs its command gets None and an empty `due`: the caller runs it."""
        src = job.source
        with self._lock:
            self._trying[src.name] = self._trying.get(src.name, 0) + 1
        result = None
        try:
            result = self._read(transport, job, timeout_s)
        finally:
            with self._lock:
                self._trying[src.name] -= 1
                parked = self._parked.setdefault(src.name, [])
                if result is None and not src.tail:
                    parked.append(job)
                due = parked[:] if self._trying[src.name] == 0 else []
                parked[:] = [] if due else parked
        return result, due

    def _read(self, transport: Transport, job: Job, timeout_s: float) -> CommandResult | None:
        assert job.read is not None
        src = job.source
        result = transport.read_file(src.name, job.read, timeout_s, src.max_bytes, tail=src.tail)
        if result is None:
            why = getattr(transport, "read_refused", None) or "the transport cannot read files"
            self._say("transport", f"file reads: {why}; files are read by commands (cat, tail) "
                      "instead")
            return None
        if self.host.sudo and src.privileged and permission_denied(result):
            self._say("sudo", "file reads: files the login user may not read (e.g. "
                      f"{job.read}) are read by `sudo -n` commands instead")
            return None
        return result

    def run_batch(self, transport: Transport, jobs: list[Job], timeout_s: float,
                  banner: bytes = b"") -> list[tuple[Job, CommandResult]]:
        """The reads of jobs (one source) as one command; each job's own command where that
        batched command cannot run on the host (no python3: exit 126/127)."""
        if len(jobs) > 1:
            src = jobs[0].source
            batch = strip_banner(transport.run(src.name, batch_argv(self.host, jobs, timeout_s),
                                               timeout_s, src.max_bytes * len(jobs) + 4096), banner)
            if batch.exit_status not in (126, 127):
                return list(zip(jobs, split_result(batch, jobs), strict=True))
            self._say("batch", f"file reads: the batched read could not run ({batch.stderr.strip()[-120:]}); "
                      "one command per file instead")
        return [(j, strip_banner(transport.run(j.source.name, j.argv, timeout_s, j.source.max_bytes),
                                 banner)) for j in jobs]

    def _say(self, kind: str, text: str) -> None:
        with self._lock:
            if kind not in self._said:
                self._said.add(kind)
                self.fallbacks.append(text)
                if self._notes is not None:
                    self._notes.append(text)
