"""What the readers read: one `Source` per file (loose) or per bundle result, the same shape
for `triage FILE...` and `analyze BUNDLE`, so one reasoning pass serves both.

A reader is a function ``Source -> Iterable[Clue]`` registered with `@reader`; it looks only
at the fields it understands and yields nothing for the rest. Readers never raise on
arbitrary text (the engine drops a crashing reader's clues and notes it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.parsers.frames import ProcessDump, ThreadStack
from pdforensics.parsers.prometheus import MetricsSnapshot


@dataclass(frozen=True)
class Source:
    """One piece of collected evidence, as text and as whatever it was parsed into.

    ``path``: the loose file, or ``raw/<host>/<file>`` of a bundle (what clues cite).
    ``host`` / ``role``: where it came from when known (a bundle's host and service role;
    a compose service or journald writer of a loose log); None when unknown.
    ``kind``: what triage detected it as (``log``, ``stacks``, ``goroutines``, ``metrics``,
    ``server_info``, ``pyspy_error``, ``load``, ... or None). ``text`` is the file's text
    (logs, dumps, JSON, kernel lines; "" for binary); ``data`` its bytes when not text
    (a Flight Recorder pickle: never unpickled). ``json``: the parsed JSON document.
    ``metrics``: (time, snapshot) samples in time order; ``dumps`` / ``goroutines``: stacks.
    ``taken_at``: when the evidence was taken (epoch), when known.
    ``processes``: the worker processes whose prefix the text's lines lost.
    """

    path: str
    kind: str | None = None
    host: str | None = None
    role: str | None = None
    text: str = ""
    data: bytes = b""
    json: Any = None
    metrics: tuple[tuple[float | None, MetricsSnapshot], ...] = ()
    dumps: tuple[ProcessDump, ...] = ()
    goroutines: tuple[ThreadStack, ...] = ()
    taken_at: float | None = None
    #: (first line, process) of the runs of lines a worker prefix (``(Worker_TP0 pid=9)``)
    #: opened before triage stripped it (parsers/ray_prefix.prefix_runs)
    processes: tuple[tuple[int, str], ...] = ()


ReaderFn = Callable[[Source], Iterable[Clue]]


@dataclass(frozen=True)
class Reader:
    name: str
    fn: ReaderFn
    description: str


#: The reader registry, in registration order (modules register at import of
#: `pdforensics.analysis.pdpath.readers`).
READERS: dict[str, Reader] = {}


def ordered_readers() -> list[Reader]:
    """The registered readers in one fixed order, by module then by place in the module: the
    order clues come out in (and so which of two equal causes of one line is read first) does
    not depend on which module some caller happened to import first."""
    return sorted(READERS.values(), key=lambda r: (r.fn.__module__, r.fn.__code__.co_firstlineno))


def reader(name: str) -> Callable[[ReaderFn], ReaderFn]:
    """Register a reader: ``@reader("sglang_log") def read(src: Source) -> Iterator[Clue]``."""

    def deco(fn: ReaderFn) -> ReaderFn:
        if name in READERS and READERS[name].fn is not fn:
            raise ValueError(f"reader {name} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()
        READERS[name] = Reader(name, fn, doc[0] if doc else "")
        return fn

    return deco


def lines(src: Source) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of the source's text, carriage returns dropped."""
    for no, line in enumerate(src.text.split("\n"), 1):
        yield no, line.rstrip("\r")
