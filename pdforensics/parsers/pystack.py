"""pystack output (``pystack remote PID`` / ``pystack core FILE``, with or without --native)."""

from __future__ import annotations

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.hostnum import to_int
from pdforensics.parsers.frames import Frame, ProcessDump, ThreadStack

HEAD = linear.compile(
    r"^Traceback for thread (?P<tid>\d+)(?: \((?P<name>[^)]*)\))? \[(?P<status>[^\]]*)\]"
    r" \(most recent call last\):\s*$")
FRAME = linear.compile(
    r"^\s+\((?P<kind>Python|C)\) File \"(?P<file>[^\"]*)\", line (?P<line>\d+), in "
    r"(?P<func>.+?)(?: \((?P<lib>[^()]*)\))?\s*$")
_PID = linear.compile(r"^(?:Dumping threads for process|pid:) (\d+)")


def _state(status: str) -> str:
    """``[Has the GIL]`` -> ``gil``; other statuses (waiting, dropping, GC) -> ``""``."""
    return "gil" if "Has the GIL" in status else ""


def _frame(m: linear.Match[str]) -> Frame:
    func = m.group("func").removesuffix(" (inlined)")
    line = to_int(m.group("line"))
    if m.group("kind") == "C":
        return Frame(func, m.group("file"), line or None, True, "", ())
    return Frame(func, m.group("file"), line or None)


def parse_pystack(text: str) -> ProcessDump | None:
    """Parse pystack output; threads leaf first (pystack prints the root first). None if empty."""
    if not text.strip():
        return None
    threads: list[ThreadStack] = []
    head: linear.Match[str] | None = None
    frames: list[Frame] = []
    pid: int | None = None

    def close() -> None:
        if head is not None:
            threads.append(ThreadStack(head.group("tid"), head.group("name"),
                                       _state(head.group("status")), tuple(reversed(frames))))

    for line in text.splitlines():
        m = HEAD.match(line)
        if m is not None:
            close()
            head, frames = m, []
            continue
        fm = FRAME.match(line)
        if fm is not None and head is not None:
            frames.append(_frame(fm))
            continue
        pm = _PID.match(line)
        if pm is not None and pid is None:
            pid = to_int(pm.group(1))
    close()
    if not threads:
        first = next(ln for ln in text.splitlines() if ln.strip())
        raise ParseError("no pystack 'Traceback for thread' header", first, 1)
    return ProcessDump("pystack", tuple(threads), pid)
