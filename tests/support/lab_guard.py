"""A test module that starts the lab or a real daemon must say so with `pytest.mark.lab`.

`-m "not lab"` then really skips every lab, sshd, Slurm, Prometheus, chromium and engine
start-up, and the lab lock (docs: PROTOCOL) is known to be needed exactly where the marker is.
The root conftest turns the guard on around every test that is not marked: a process started
from the test process whose command line is one of those fails the test, naming what it
started. A `pdforensics lab up` in a child process is caught by its command line too."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from os import PathLike, fspath
from pathlib import PurePath
from typing import Any

DAEMONS = frozenset({"sshd", "chromium", "chromium-browser", "prometheus", "slurmctld", "slurmd",
                     "munged", "smg"})
MODULES = ("sglang.launch_server", "sglang_router.launch_router")  # the lab's or the engine's

_armed = False
_original_init = subprocess.Popen.__init__


class UnmarkedLabError(RuntimeError):
    """A test not marked `lab` started the lab or a daemon."""


def _words(args: Any) -> list[str]:
    if isinstance(args, (str, bytes, PathLike)):
        text = fspath(args)
        return (text.decode(errors="replace") if isinstance(text, bytes) else text).split()
    if isinstance(args, Sequence):
        return [w.decode(errors="replace") if isinstance(w, bytes) else str(fspath(w)) for w in args]
    return []


def lab_program(args: Any) -> str | None:
    """What a command line starts, when it is the lab or a daemon of the lab marker; else None."""
    words = _words(args)
    for i, word in enumerate(words):
        if PurePath(word).name in DAEMONS:
            return PurePath(word).name
        if word in MODULES:
            return word
        if word == "lab" and words[i + 1:i + 2] == ["up"]:
            return "lab up"
    return None


def _guarded_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
    if _armed and (what := lab_program(args)) is not None:
        raise UnmarkedLabError(f"this test starts {what} but its module is not marked: add "
                               "`pytestmark = pytest.mark.lab` (and run it under the lab lock)")
    _original_init(self, args, *rest, **kw)


def install() -> None:
    """Put the guard in front of subprocess.Popen (disarmed until `arm`)."""
    subprocess.Popen.__init__ = _guarded_init  # type: ignore[method-assign]


def arm(on: bool) -> None:
    global _armed
    _armed = on
