"""Python faulthandler dumps (``faulthandler.dump_traceback(all_threads=True)``, fatal errors)."""

from __future__ import annotations

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.hostnum import to_int
from pdforensics.parsers.frames import Frame, ProcessDump, ThreadStack

_HEAD = linear.compile(
    r"^(?P<cur>Current thread|Thread) (?P<tid>0x[0-9a-fA-F]+)"
    r"(?: \[(?P<name>[^\]]*)\])? \(most recent call first\):\s*$"
)
_STACK = linear.compile(r"^(?:Current )?[Ss]tack \(most recent call first\):\s*$")
_FRAME = linear.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+|\?\?\?) in (?P<func>.*?)\s*$')
_OTHER = linear.compile(r"^\s+(?:<no Python frame>|\.\.\.|<unknown>)\s*$")
_FATAL = linear.compile(r"^Fatal Python error: (.{1,300})$")
#: lines that open a faulthandler dump (for finding dumps inside logs)
START = linear.compile(r"^(?:Fatal Python error: |Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!)")
HEAD = _HEAD
FRAME = _FRAME
OTHER = _OTHER
STACK = _STACK


def parse_faulthandler(text: str) -> ProcessDump | None:
    """Parse a faulthandler dump (leaf first); None for empty input."""
    if not text.strip():
        return None
    threads: list[ThreadStack] = []
    cur: tuple[str, str | None, bool] | None = None
    frames: list[Frame] = []
    cache: dict[tuple[str, str, str], Frame] = {}
    seen_header = False
    crash: str | None = None

    def close() -> None:
        if cur is not None:
            threads.append(ThreadStack(cur[0], cur[1], "", tuple(frames), current=cur[2]))

    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = _HEAD.match(line)
        if m is not None or _STACK.match(line):
            close()
            seen_header = True
            frames = []
            if m is not None:
                cur = (m.group("tid"), m.group("name"), m.group("cur") == "Current thread")
            else:
                cur = ("?", None, True)
            continue
        if cur is None and not seen_header and _FRAME.match(line):
            cur = ("?", "(thread header not in the text)", False)  # pasted from mid-thread
        if cur is None:
            fatal = _FATAL.match(line)
            crash = crash or (fatal.group(1).strip() if fatal else None)
            continue  # "Fatal Python error: ..." and other preamble
        fm = _FRAME.match(line)
        if fm is not None:
            key = (fm.group("func"), fm.group("file"), fm.group("line"))
            frame = cache.get(key)
            if frame is None:
                ln = fm.group("line")
                frame = Frame(key[0], key[1], to_int(ln) if ln.isdigit() else None)
                cache[key] = frame
            frames.append(frame)
            continue
        if _OTHER.match(line) or not line.strip():
            continue  # some pastes put a blank line after every frame
        close()
        cur = None  # the block ended: trailer such as "Extension modules: ..."
    close()
    if not seen_header and not threads:
        first = next(ln for ln in text.splitlines() if ln.strip())
        raise ParseError("no faulthandler thread header", first, 1)
    return ProcessDump("faulthandler", tuple(threads), crash=crash)
