"""A login shell that prints on stdout (an rc file's `echo`, a motd script) before every
command: measured once per host with a command that prints nothing, then cut from the front
of every output, so the banner never reaches a parser or sticks to a process's argv[0]."""

from __future__ import annotations

from dataclasses import replace

from pdforensics.model import CommandResult
from pdforensics.transport.base import Transport

PROBE_SOURCE = "login_banner"
PROBE_TIMEOUT_S = 5.0
MAX_BANNER = 64 * 1024


def probe_banner(transport: Transport) -> bytes:
    """What the host prints for `true`: the login banner (b"" on a quiet host)."""
    result = transport.run(PROBE_SOURCE, ("true",), PROBE_TIMEOUT_S, MAX_BANNER)
    if result.exit_status != 0 or result.truncated:
        return b""
    return result.stdout


def strip_banner(result: CommandResult, banner: bytes) -> CommandResult:
    """The result without the banner at the front of its stdout (unchanged when absent)."""
    if not banner or not result.stdout.startswith(banner):
        return result
    return replace(result, stdout=result.stdout[len(banner):])


def banner_note(banner: bytes) -> str:
    first = banner.decode("utf-8", "replace").strip().splitlines()[:1]
    shown = (first[0][:80] if first else "")
    return (f"the login shell prints {len(banner)} byte(s) on stdout before every command "
            f"({shown!r}...): removed from each output")
