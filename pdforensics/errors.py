"""One exception hierarchy and the one table of exit codes every command uses."""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitStatus(IntEnum):
    """What a pdforensics command's exit code means (the table in the README)."""

    OK = 0  # the command did its work completely
    ERROR = 1  # an error; nothing (or nothing usable) was produced, or a change the capture
    #            made on a server could not be undone (capture --request-log)
    USAGE = 2  # bad options, cluster file or arguments: nothing was done
    PARTIAL = 3  # done, but some evidence or some input files are missing
    VERDICT = 4  # --fail-on: the tool worked and the verdict is at or past the given level
    BUSY = 5  # another snapshot holds the store's lock
    NOTHING_COLLECTED = 6  # capture/snapshot: no host could be reached, no evidence at all
    NOT_READY = 7  # doctor: a readiness check failed (the next capture would be blind there)
    OUTAGE = 8  # --fail-on: the verdict is OUTAGE (no worker left for a role: every request fails)
    HANGUP = 128 + signal.SIGHUP  # the terminal went away; the partial bundle was still written
    INTERRUPTED = 128 + signal.SIGINT  # Ctrl-C; the partial bundle was still written
    TERMINATED = 128 + signal.SIGTERM  # SIGTERM; the partial bundle was still written

    @classmethod
    def for_signal(cls, signum: int) -> ExitStatus:
        if signum == signal.SIGHUP:
            return cls.HANGUP
        return cls.INTERRUPTED if signum == signal.SIGINT else cls.TERMINATED


class PdforensicsError(Exception):
    """Base of every error a user may see; its message is one line."""

    exit_code: ExitStatus = ExitStatus.ERROR


class ConfigError(PdforensicsError):
    """The cluster file, an option or ~/.ssh/config is wrong."""

    exit_code = ExitStatus.USAGE


class TransportError(PdforensicsError):
    """A host could not be reached or refused us (recorded as data during capture)."""


class HostKeyError(TransportError):
    """The host key is unknown or changed."""


class BundleError(PdforensicsError):
    """A bundle is missing, unreadable, or fails verification."""


class ParseError(PdforensicsError):
    """A parser met text it cannot read; the message quotes the offending line."""

    def __init__(self, message: str, line: str | None = None, lineno: int | None = None):
        self.line = line
        self.lineno = lineno
        if line is not None:
            where = f" (line {lineno})" if lineno is not None else ""
            message = f"{message}{where}: {line[:200]!r}"
        super().__init__(message)


class Interrupted(PdforensicsError):
    """SIGINT, SIGTERM or SIGHUP arrived; the partial bundle was still written."""

    def __init__(self, signum: int, bundle: str | None = None, detail: str | None = None):
        self.signum = signum
        self.bundle = bundle
        self.exit_code = ExitStatus.for_signal(signum)
        where = f"; partial bundle: {bundle}" if bundle else ""
        also = f"; {detail}" if detail else ""
        super().__init__(f"interrupted by signal {signum}{where}{also}")
