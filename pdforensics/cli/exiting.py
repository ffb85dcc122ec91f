"""Leaving a command that read a large input without freeing its heap object by object.

After a 100 MB triage the interpreter's own teardown (every signature line, clue and text
freed one at a time, the caches emptied) took most of a second. When the command runs as its
own process, its output is flushed and the process ends at once; under a test's runner (its
stdout replaced) it exits as usual.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from pdforensics.terminal import SafeStream


def _own(stream: object) -> object:
    return stream.raw if isinstance(stream, SafeStream) else stream


def exit_now(code: int) -> NoReturn:
    """End the command with ``code``: at once when this is the process's own command line
    (its streams, behind the terminal filter, are the process's own)."""
    if _own(sys.stdout) is sys.__stdout__ and _own(sys.stderr) is sys.__stderr__:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe: nothing more can be said on it
            pass
        else:
            os._exit(code)
    sys.exit(code)
