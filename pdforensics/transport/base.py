"""The transport interface and the remote-side wrapping every command gets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pdforensics.model import CommandResult, HostSpec

STDERR_CAP = 64 * 1024
KILL_GRACE_S = 2


class Transport(Protocol):
    """Runs single-statement commands on one host; safe to call from many threads."""

    host: HostSpec
    #: the host refused endpoint fetches through the connection (then curl runs there)
    forwarding_refused: bool

    def connect(self, timeout_s: float) -> None:
        """Open the connection; raises TransportError with a one-line reason."""

    def run(
        self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int
    ) -> CommandResult:
        """Run argv (already wrapped by remote_argv) and never raise: failures are data."""
        ...

    def fetch(self, source: str, url: str, timeout_s: float, max_bytes: int,
              body: bytes | None = None) -> CommandResult | None:
        """GET an endpoint (POST ``body`` as JSON when given) from the host's side without
        running anything there, in curl -i form; None when this transport cannot (then the
        endpoint's curl command is run)."""
        ...

    def read_file(self, source: str, path: str, timeout_s: float, max_bytes: int,
                  tail: bool = False) -> CommandResult | None:
        """Read a regular file on the host without a shell, as `cat PATH` (tail: as
        `tail -c max_bytes -- PATH`, from the first whole line) would; argv ("read", PATH).
        None when this transport cannot (then the source's command is run)."""
        ...

    def close(self) -> None:
        """Close the connection; in-flight runs end with an error result."""


def remote_argv(
    argv: Sequence[str], timeout_s: float, sudo: bool = False
) -> tuple[str, ...]:
    """Wrap a command so the remote side kills it on time: `[sudo -n] timeout -k 2 S cmd`."""
    seconds = max(1, int(round(timeout_s)))
    wrapped = ("timeout", "-k", str(KILL_GRACE_S), str(seconds), *argv)
    return ("sudo", "-n", *wrapped) if sudo else wrapped


def local_wait_s(timeout_s: float) -> float:
    """How long the local side waits for a wrapped command before giving up on it."""
    return max(1, int(round(timeout_s))) + KILL_GRACE_S + 1.5
