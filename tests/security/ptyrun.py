"""Run a command on a real pseudo-terminal and keep every byte the terminal received."""

from __future__ import annotations

import fcntl
import os
import re
import select
import subprocess
import termios
import time
from collections.abc import Sequence

# What must never reach a terminal from host text: ESC, BEL, backspace, DEL, C1 (UTF-8),
# bidi overrides/isolates (UTF-8). A CR is allowed only as the pty's own CR LF.
FORBIDDEN = (b"\x1b", b"\x07", b"\x08", b"\x7f", b"\xe2\x80\xae", b"\xe2\x80\xad", b"\xe2\x81\xa6",
             *(bytes([0xC2, c]) for c in range(0x80, 0xA0)))


def _controlling_tty() -> None:
    """In the child: a new session whose controlling terminal is the pty (stdin), so closing
    the pty's master sends it SIGHUP, as a dropped SSH session does."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def run_on_pty(argv: Sequence[str], timeout: float = 120, env: dict[str, str] | None = None,
               hang_up_after: float | None = None, hang_up_once: bytes = b"") -> tuple[int, bytes]:
    """(exit status, bytes written to the terminal): stdin, stdout and stderr are the pty.
    hang_up_after: close the terminal after that many seconds (the kernel sends SIGHUP),
    counted from when the terminal first shows `hang_up_once` (from the start by default: on
    a loaded machine the program may not have printed anything yet after a fixed delay)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, preexec_fn=_controlling_tty,
                            env={**os.environ, "TERM": "xterm-256color", **(env or {})})
    os.close(slave)
    received = bytearray()
    end = time.monotonic() + timeout
    hang_up_at = None if hang_up_after is None or hang_up_once else time.monotonic() + hang_up_after
    try:
        while time.monotonic() < end:
            if hang_up_at is None and hang_up_after is not None and hang_up_once in received:
                hang_up_at = time.monotonic() + hang_up_after
            if hang_up_at is not None and time.monotonic() >= hang_up_at:
                os.close(master)
                master = -1
                return proc.wait(timeout=max(1.0, end - time.monotonic())), bytes(received)
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    break
                if not chunk:
                    break
                received += chunk
            elif proc.poll() is not None:
                continue
        else:
            proc.kill()
            raise AssertionError(f"{argv} still running after {timeout}s:\n{bytes(received)!r}")
    finally:
        if master >= 0:
            os.close(master)
    return proc.wait(timeout=10), bytes(received)


# The capture's live progress block (pdforensics/progress.py), the tool's own sequences: at
# the start of a line only, "cursor up N lines" then "erase line". Host text never reaches
# a line start unfiltered (its newlines are shown as \n), so any other ESC is still caught.
_OWN_BLOCK = re.compile(rb"(?:(?<=\n)|^)(?:\x1b\[\d+A)?\x1b\[2K")


def unsafe_bytes(received: bytes, own_block: bool = False) -> list[str]:
    """Every forbidden sequence found, with its context; empty when the terminal was safe.
    own_block: the capture's progress block sequences (only those, only at line starts) allowed."""
    if own_block:
        received = _OWN_BLOCK.sub(b"", received)
    found = [f"{seq!r} at {received.find(seq)}: {received[max(0, received.find(seq) - 40):received.find(seq) + 20]!r}"
             for seq in FORBIDDEN if seq in received]
    bare_cr = [i for i in range(len(received)) if received[i] == 0x0D and received[i + 1:i + 2] != b"\n"]
    if bare_cr:
        i = bare_cr[0]
        found.append(f"bare CR at {i}: {received[max(0, i - 40):i + 20]!r}")
    return found
