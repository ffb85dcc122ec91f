"""A source's reading: its parser applied to its raw output, kept in parsed/ and read back.

The capture parses each result on a background thread into ``parsed/<host>/<key>.json``
together with the digest of the raw bytes and the parser it used; ``read_parsed`` takes that
file when it still matches the raw file (same digest, same parser, decodes to the parser's
return type) and parses the raw file again otherwise (bundles of older versions, a stale or
malformed file). Live capture and offline reading share this one code path.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import queue
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, get_type_hints

from pdforensics.collectors import REGISTRY
from pdforensics.errors import BundleError, ParseError
from pdforensics.views.codec import DecodeError, Decoder, decoder_for, return_type, to_jsonable

if TYPE_CHECKING:
    from pdforensics.bundle.ondisk import Bundle, BundleWriter, ResultEntry

# parsed/ files carry this format number; files without it (older versions) are re-parsed
PARSED_FORMAT = 2

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
    if takes_bytes(spec):
        return fn(data)
    return fn(data.decode("utf-8", "replace"))


@cache
def takes_bytes(spec: str) -> bool:
    """Whether a parser reads bytes rather than text: its own annotation says so
    (``def parse(data: bytes)``), so no source has to repeat it."""
    fn = resolve(spec)
    first = next(iter(inspect.signature(fn).parameters))
    return get_type_hints(fn).get(first) is bytes


def parser_of(source: str) -> str | None:
    """The ``module:function`` parser spec of a registered source (None: no parser)."""
    src = REGISTRY.get(source)
    return src.parser if src is not None else None


def parsed_path(entry: ResultEntry) -> str:
    """Where a result's reading lives, relative to parsed/."""
    return f"{entry.host}/{entry.key}.json"


def write_parsed_entry(writer: BundleWriter, entry: ResultEntry) -> None:
    """parsed/<host>/<key>.json for one result, when its source has a parser."""
    spec = parser_of(entry.source)
    if entry.path is None or spec is None:
        return
    rel = f"parsed/{parsed_path(entry)}"
    try:
        data = (writer.tmp / entry.path).read_bytes()
    except OSError as exc:  # the raw file could not be kept (disk full): nothing to parse
        writer.write_json(rel, {"error": f"raw output unreadable: {exc.strerror or exc}"},
                          compact=True)
        return
    obj: dict[str, Any] = {"format": PARSED_FORMAT, "parser": spec,
                           "raw_sha256": hashlib.sha256(data).hexdigest()}
    try:
        obj["parsed"] = to_jsonable(parse_output(entry.source, data))
    except ParseError as exc:
        obj["error"] = str(exc)
    except Exception as exc:  # a parser bug must never cost the bundle
        obj["error"] = f"parser failed: {type(exc).__name__}: {exc}"
    writer.write_json(rel, obj, compact=True)


@dataclass(frozen=True)
class Parsed:
    """One result's reading: the parser's value, or why there is none."""

    value: Any
    error: str | None = None
    cached: bool = False  # read from parsed/ rather than parsed again


@cache
def _decoder(spec: str) -> Decoder:
    return decoder_for(return_type(resolve(spec)))


def cached_reading(doc: Any, entry: ResultEntry, spec: str) -> Parsed | None:
    """The reading kept in parsed/ when it is current and well-formed, else None."""
    if (not isinstance(doc, dict) or doc.get("format") != PARSED_FORMAT
            or doc.get("parser") != spec or entry.sha256 is None
            or doc.get("raw_sha256") != entry.sha256):
        return None
    if "parsed" not in doc:
        err = doc.get("error")
        return Parsed(None, err, cached=True) if isinstance(err, str) else None
    try:
        return Parsed(_decoder(spec)(doc["parsed"]), cached=True)
    except (DecodeError, RecursionError):
        return None


def read_parsed(bundle: Bundle, entry: ResultEntry, raw: Callable[[ResultEntry], bytes]
                ) -> Parsed:
    """A result's reading from parsed/ when current, else its raw bytes parsed now."""
    spec = parser_of(entry.source)
    if spec is None:
        return Parsed(None)
    try:
        cached = bundle.parsed(parsed_path(entry))
    except BundleError:  # a cache file refused or not JSON: the raw bytes are the evidence
        cached = None
    hit = cached_reading(cached, entry, spec)
    if hit is not None:
        return hit
    try:
        return Parsed(parse_output(entry.source, raw(entry)))
    except ParseError as exc:
        return Parsed(None, str(exc))


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
