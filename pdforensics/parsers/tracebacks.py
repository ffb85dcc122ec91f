"""Plain Python tracebacks: chained, exception groups, pytest-timeout thread stacks, cut ones."""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.hostnum import to_int
from pdforensics.parsers.frames import Frame, ProcessDump, ThreadStack

#: "Traceback (most recent call last):" anywhere in a line (after a log prefix or a "| " gutter)
HEAD = linear.compile(r"Traceback \(most recent call last\):\s*$")
#: gdb's ``py-bt``: the same frames, innermost first
HEAD_FIRST = linear.compile(r"Traceback \(most recent call first\):\s*$")
#: a C function py-bt shows between Python frames ("<built-in method allreduce of ...>")
BUILTIN = linear.compile(r"^\s*<built-in (?:method|function) (?P<func>[\w.]{1,200})(?: of [^>]{0,300})?>\s*$")
#: pytest-timeout: "~~~~~ Stack of Thread-4 (139924397356608) ~~~~~"
STACK_OF = linear.compile(r"^~+ Stack of (?P<name>.+?) \((?P<tid>\d+)\) ~+\s*$")
#: '  File "x.py", line 3, in f' (a "|" gutter in exception groups; a paste may leave the
#: line number out: '  File ".../prefill.py", in pop_bootstrapped')
FRAME = linear.compile(r"^[\s|]*File \"(?P<file>[^\"]*)\"(?:, line (?P<line>\d+))?, in (?P<func>.+?)\s*$")
#: a source line, caret line or gutter under a frame (indented further than "  File")
CODE = linear.compile(r"^(?:\s{4,}|[\s|]*[\^~]+\s*$|\s*\|)")
#: the lines between the tracebacks of one chain
CHAIN = linear.compile(r"^\s*(?:During handling of the above exception|The above exception was the "
                   r"direct cause)")


def is_py_bt(text: str) -> bool:
    """The text holds gdb's ``py-bt`` (a debugger's backtrace of a Python process)."""
    return "Traceback (most recent call first):" in text


def parse_traceback_block(lines: Sequence[str], index: int = 0) -> ThreadStack | None:
    """One traceback (header optional: a paste may start at its frames) -> leaf-first stack;
    gdb's py-bt ("most recent call first") is leaf-first already, its built-in calls kept."""
    name: str | None = None
    tid = f"traceback-{index + 1}"
    frames: list[Frame] = []
    leaf_first = bool(lines) and HEAD_FIRST.search(lines[0]) is not None  # gdb's py-bt
    for line in lines:
        sm = STACK_OF.match(line)
        if sm is not None:
            name, tid = sm.group("name"), sm.group("tid")
            continue
        fm = FRAME.match(line)
        if fm is not None:
            no = fm.group("line")
            frames.append(Frame(fm.group("func"), fm.group("file"), to_int(no) if no else None))
        elif leaf_first and (bm := BUILTIN.match(line)) is not None:
            frames.append(Frame(f"<built-in {bm.group('func')}>", "", None, True))
    if not frames and name is None:
        return None
    return ThreadStack(tid, name, "", tuple(frames if leaf_first else reversed(frames)))


def split_tracebacks(lines: Sequence[str]) -> list[list[str]]:
    """Cut text into one block per traceback (each header, or frames before the first one)."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if HEAD.search(line) or HEAD_FIRST.search(line) or STACK_OF.match(line):
            blocks.append([line])
        else:
            blocks[-1].append(line)
    return [b for b in blocks if any(FRAME.match(ln) or STACK_OF.match(ln) for ln in b)]


def parse_tracebacks(text: str) -> ProcessDump | None:
    """Every traceback in ``text`` as one stack each; None for empty input."""
    if not text.strip():
        return None
    blocks = split_tracebacks(text.splitlines())
    threads = [t for i, b in enumerate(blocks) if (t := parse_traceback_block(b, i)) is not None]
    if not threads:
        first = next(ln for ln in text.splitlines() if ln.strip())
        raise ParseError("no Python traceback frame", first, 1)
    return ProcessDump("traceback", tuple(threads))
