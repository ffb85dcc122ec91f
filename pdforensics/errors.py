"""One exception hierarchy, mapped to exit codes in one place."""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class PdforensicsError(Exception):
    """Base of every error a user may see; its message is one line."""

    exit_code = EXIT_ERROR


class ConfigError(PdforensicsError):
    """The cluster file, an option or ~/.ssh/config is wrong."""

    exit_code = EXIT_USAGE


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

    def __init__(self, signum: int, bundle: str | None = None):
        self.signum = signum
        self.bundle = bundle
        self.exit_code = 128 + signum  # 130 SIGINT, 143 SIGTERM, 129 SIGHUP
        where = f"; partial bundle: {bundle}" if bundle else ""
        super().__init__(f"interrupted by signal {signum}{where}")
