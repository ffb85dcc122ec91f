"""Apply each source's parser to its raw output: the same code for live and offline use."""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from pdforensics.collectors import REGISTRY
from pdforensics.errors import ParseError

if TYPE_CHECKING:
    from pdforensics.bundle import BundleWriter

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


def write_parsed(writer: BundleWriter) -> None:
    """parsed/<host>/<key>.json for every result whose source has a parser."""
    for entry in writer.entries():
        if entry.path is None or entry.source not in REGISTRY:
            continue
        if REGISTRY[entry.source].parser is None:
            continue
        data = (writer.tmp / entry.path).read_bytes()
        try:
            obj: Any = {"parsed": to_jsonable(parse_output(entry.source, data))}
        except ParseError as exc:
            obj = {"error": str(exc)}
        except Exception as exc:  # a parser bug must never cost the bundle
            obj = {"error": f"parser failed: {type(exc).__name__}: {exc}"}
        writer.write_json(f"parsed/{entry.host}/{entry.key}.json", obj, compact=True)
