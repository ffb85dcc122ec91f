"""Apply each source's parser to its raw output: the same code for live and offline use."""

from __future__ import annotations

import dataclasses
import importlib
import math
import queue
import threading
from collections.abc import Callable, Collection
from functools import cache
from typing import TYPE_CHECKING, Any

from pdforensics.collectors import REGISTRY
from pdforensics.errors import ParseError

if TYPE_CHECKING:
    from pdforensics.bundle import BundleWriter, ResultEntry

# parsers that read bytes rather than text
BYTES_PARSERS = {"http:parse_http_response"}


@cache
def resolve(spec: str) -> Callable[[Any], Any]:
    """`module:function` under pdforensics.parsers -> the function."""
    module, _, func = spec.partition(":")
    fn: Callable[[Any], Any] = getattr(importlib.import_module(f"pdforensics.parsers.{module}"),
                                       func)
    return fn


def parse_output(source: str, data: bytes) -> Any:
    """Parse one raw output with its source's parser; raises ParseError."""
    spec = REGISTRY[source].parser if source in REGISTRY else None
    if spec is None:
        return None
    fn = resolve(spec)
    if spec in BYTES_PARSERS:
        return fn(data)
    return fn(data.decode("utf-8", "replace"))


_FIELDS: dict[type, tuple[str, ...]] = {}  # dataclass -> its field names, looked up once
_SCALARS = (str, int, bool, type(None))


def to_jsonable(obj: Any) -> Any:
    """Frozen dataclasses (and tuples of them) -> plain JSON values."""
    t = type(obj)
    if t in _SCALARS:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else str(obj)
    names = _FIELDS.get(t)
    if names is None and dataclasses.is_dataclass(t):
        names = _FIELDS.setdefault(t, tuple(f.name for f in dataclasses.fields(t)))
    if names is not None:
        return {n: to_jsonable(getattr(obj, n)) for n in names}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def write_parsed_entry(writer: BundleWriter, entry: ResultEntry) -> None:
    """parsed/<host>/<key>.json for one result, when its source has a parser."""
    if entry.path is None or entry.source not in REGISTRY or REGISTRY[entry.source].parser is None:
        return
    try:
        data = (writer.tmp / entry.path).read_bytes()
    except OSError as exc:  # the raw file could not be kept (disk full): nothing to parse
        writer.write_json(f"parsed/{entry.host}/{entry.key}.json",
                          {"error": f"raw output unreadable: {exc.strerror or exc}"}, compact=True)
        return
    try:
        obj: Any = {"parsed": to_jsonable(parse_output(entry.source, data))}
    except ParseError as exc:
        obj = {"error": str(exc)}
    except Exception as exc:  # a parser bug must never cost the bundle
        obj = {"error": f"parser failed: {type(exc).__name__}: {exc}"}
    writer.write_json(f"parsed/{entry.host}/{entry.key}.json", obj, compact=True)


class BackgroundParser:
    """Parses each result on its own thread as soon as it is written, so parsing runs while
    the capture still waits on the hosts instead of after the last one answered.

    ``finish(rewritten)`` waits for the queue, then parses what never came through it (a
    sidecar's results) and again every result whose raw file the final rescrub rewrote, so
    parsed/ always derives from the raw bytes the bundle keeps."""

    def __init__(self, writer: BundleWriter):
        self.writer = writer
        self._queue: queue.SimpleQueue[ResultEntry | None] = queue.SimpleQueue()
        self._parsed: set[tuple[str, str]] = set()
        self._thread = threading.Thread(target=self._run, name="parser", daemon=True)
        self._thread.start()

    def submit(self, entry: ResultEntry) -> None:
        self._queue.put(entry)

    def _run(self) -> None:
        while (entry := self._queue.get()) is not None:
            write_parsed_entry(self.writer, entry)
            self._parsed.add((entry.host, entry.key))

    def drain(self) -> None:
        """Wait until everything submitted so far is parsed; the thread then ends."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def finish(self, rewritten: Collection[str] = ()) -> None:
        self.drain()
        for entry in self.writer.entries():
            if (entry.host, entry.key) not in self._parsed or entry.path in rewritten:
                write_parsed_entry(self.writer, entry)
