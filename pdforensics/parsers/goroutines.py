"""Go goroutine dumps: SIGQUIT/panic tracebacks, pprof ``debug=2`` and grouped ``debug=1``."""

from __future__ import annotations

import re

from pdforensics.errors import ParseError
from pdforensics.parsers.stackmodel import Frame, ThreadStack

_HEAD = re.compile(r"^goroutine (\d+)(?: gp=\S+ m=\S+(?: mp=\S+)?)? \[([^\]]*)\]:\s*$")
_CREATED = re.compile(r"^created by (.+?)(?: in goroutine (\d+))?\s*$")
_ORIGIN = re.compile(r"\[originating from goroutine (\d+)\]")
_FILELINE = re.compile(r"^\t(?P<file>.+?):(?P<line>\d+)(?: (?P<off>\+0x[0-9a-fA-F]+))?.*$")
_MINUTES = re.compile(r"^(\d+) minutes?$")
_PROFILE = re.compile(r"^goroutine profile: total (\d+)\s*$")
_GROUP = re.compile(r"^(\d+) @(?: 0x[0-9a-fA-F]+)*\s*$")
_G1FRAME = re.compile(
    r"^#\t(?P<pc>0x[0-9a-fA-F]+)\t+(?P<func>[^\t]+?)(?P<off>\+0x[0-9a-fA-F]+)?\t+(?P<file>[^\t]+?)"
    r":(?P<line>\d+)\s*$"
)
_G1BARE = re.compile(r"^#\t(?P<pc>0x[0-9a-fA-F]+)\s*$")


def _strip_args(call: str) -> str:
    """``pkg.(*T).m(0xc0, {0x1?})`` -> ``pkg.(*T).m``."""
    if not call.endswith(")"):
        return call
    depth = 0
    for i in range(len(call) - 1, -1, -1):
        c = call[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return call[:i] if i > 0 else call
    return call


def _parse_state(raw: str) -> tuple[str, int | None, bool]:
    parts = [p.strip() for p in raw.split(",")]
    state = parts[0]
    minutes: int | None = None
    locked = False
    for p in parts[1:]:
        m = _MINUTES.match(p)
        if m is not None:
            minutes = int(m.group(1))
        elif p == "locked to thread":
            locked = True
    return state, minutes, locked


def parse_goroutines(text: str) -> tuple[ThreadStack, ...]:
    """Parse a goroutine dump; ``count`` > 1 for ``debug=1`` groups. Leaf frame first."""
    if not text.strip():
        return ()
    lines = text.splitlines()
    if any(_PROFILE.match(ln) for ln in lines[:50]):
        return _parse_debug1(lines)
    return _parse_traceback(lines)


def _parse_traceback(lines: list[str]) -> tuple[ThreadStack, ...]:
    out: list[ThreadStack] = []
    cache: dict[tuple[str, str, str, str], Frame] = {}
    gid: str | None = None
    state, minutes, locked = "", None, False
    frames: list[Frame] = []
    created: Frame | None = None
    created_in: str | None = None
    origin: str | None = None
    pending: str | None = None  # function line waiting for its file line
    pending_created = False
    in_ancestors = False  # GODEBUG=tracebackancestors: the creators' stacks, not this goroutine's
    seen = False

    def close() -> None:
        nonlocal gid
        if gid is not None:
            out.append(ThreadStack(gid, None, state, tuple(frames), minutes, created, created_in,
                                   origin, 1, False, locked, True))
        gid = None

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r")
        m = _HEAD.match(line)
        if m is not None:
            close()
            seen = True
            gid = m.group(1)
            state, minutes, locked = _parse_state(m.group(2))
            frames, created, created_in, origin, pending = [], None, None, None, None
            pending_created = in_ancestors = False
            continue
        if gid is None:
            continue  # "panic: ...", "SIGQUIT: quit", register dumps
        if not line.strip():
            close()
            continue
        om = _ORIGIN.search(line)
        if om is not None and not line.startswith("\t"):
            if origin is None:  # the first ancestor is the nearest: the creator
                origin = om.group(1)
            if pending is not None and not pending_created:
                frames.append(Frame(pending))
            pending, pending_created, in_ancestors = None, False, True
            continue
        if in_ancestors:
            continue
        if line.startswith("\t"):
            fm = _FILELINE.match(line)
            if fm is None or pending is None:
                raise ParseError("goroutine file line without a function", line, lineno)
            key = (pending, fm.group("file"), fm.group("line"), fm.group("off") or "")
            frame = cache.get(key)
            if frame is None:
                frame = Frame(key[0], key[1], int(key[2]), False, key[3])
                cache[key] = frame
            if pending_created:
                created = frame
            else:
                frames.append(frame)
            pending, pending_created = None, False
            continue
        cm = _CREATED.match(line)
        if cm is not None:
            pending, pending_created = cm.group(1), True
            created_in = cm.group(2)
            continue
        if line.startswith("...") and "frames elided" in line:
            continue
        if pending is not None:
            frames.append(Frame(pending))  # a function line with no file line (rare)
        pending, pending_created = _strip_args(line.strip()), False
    close()
    if not seen:
        first = next(ln for ln in lines if ln.strip())
        raise ParseError("no goroutine header found", first, 1)
    return tuple(out)


def _parse_debug1(lines: list[str]) -> tuple[ThreadStack, ...]:
    out: list[ThreadStack] = []
    cache: dict[tuple[str, str, str, str], Frame] = {}
    count: int | None = None
    frames: list[Frame] = []
    n = 0

    def close() -> None:
        nonlocal count, n
        if count is not None:
            n += 1
            out.append(ThreadStack(f"group{n}", None, "", tuple(frames), count=count,
                                   goroutine=True))
        count = None

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r")
        if _PROFILE.match(line):
            continue
        gm = _GROUP.match(line)
        if gm is not None:
            close()
            count, frames = int(gm.group(1)), []
            continue
        if not line.strip():
            close()
            continue
        if count is None:
            continue
        fm = _G1FRAME.match(line)
        if fm is not None:
            key = (fm.group("func"), fm.group("file"), fm.group("line"), fm.group("off") or "")
            frame = cache.get(key)
            if frame is None:
                frame = Frame(key[0], key[1], int(key[2]), False, key[3])
                cache[key] = frame
            frames.append(frame)
            continue
        if _G1BARE.match(line) or line.startswith("# labels:"):
            continue
        raise ParseError("unexpected line in goroutine debug=1 profile", line, lineno)
    close()
    return tuple(out)
