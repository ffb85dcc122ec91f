"""A host's file reads during a capture: through the transport (no shell) where it can, the
source's command where it cannot; each fallback said once per host."""

from __future__ import annotations

import threading

from pdforensics.collectors.base import Job
from pdforensics.model import CommandResult, HostSpec
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

    def read(self, transport: Transport, job: Job, timeout_s: float) -> CommandResult | None:
        """The file's bytes, or None when the job's command must run instead: the transport
        cannot read files (no SFTP subsystem), or the login user may not read this one and
        the host's privileged reads go through `sudo -n`."""
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

    def _say(self, kind: str, text: str) -> None:
        with self._lock:
            if kind not in self._said:
                self._said.add(kind)
                self.fallbacks.append(text)
                if self._notes is not None:
                    self._notes.append(text)
