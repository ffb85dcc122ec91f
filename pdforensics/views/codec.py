"""Parser results <-> plain JSON, both ways, checked against the parser's return type.

``to_jsonable`` writes a frozen dataclass tree as JSON values (parsed/ in a bundle);
``decoder_for(T)`` reads such values back into ``T``, strictly: a value of the wrong shape
raises ``DecodeError`` (a bundle is untrusted input, and a cached parse that does not fit
its type is re-parsed from the raw file instead).
"""

from __future__ import annotations

import base64
import dataclasses
import math
import types
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

Decoder = Callable[[Any], Any]
BYTES_KEY = "$base64"  # bytes that are not UTF-8 are written as {"$base64": ...}

_FIELDS: dict[type, tuple[str, ...]] = {}  # dataclass -> its field names, looked up once
_SCALARS = (str, int, bool, type(None))


class DecodeError(ValueError):
    """A JSON value does not fit the type it should decode to."""


def to_jsonable(obj: Any) -> Any:
    """Frozen dataclasses (and tuples of them) -> plain JSON values."""
    t = type(obj)
    if t is int and obj.bit_length() > 1024:  # json.dumps raises past 4300 digits: a host's number
        return f"<integer of {obj.bit_length()} bits>"
    if t in _SCALARS:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else str(obj)
    names = _FIELDS.get(t)
    if names is None and dataclasses.is_dataclass(t):
        names = _FIELDS.setdefault(t, tuple(f.name for f in dataclasses.fields(t) if f.init))
    if names is not None:
        return {n: to_jsonable(getattr(obj, n)) for n in names}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        try:
            return obj.decode("utf-8")
        except UnicodeDecodeError:
            return {BYTES_KEY: base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def return_type(fn: Callable[..., Any]) -> Any:
    """The evaluated return annotation of a parser function."""
    return get_type_hints(fn)["return"]


@cache
def decoder_for(tp: Any) -> Decoder:
    """A strict decoder of JSON values into ``tp`` (built once per type)."""
    if tp is Any or tp is object:
        return lambda v: v
    if tp in (str, int, bool, float, bytes, type(None)):
        return _SCALAR_DECODERS[tp]
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union(tuple(decoder_for(a) for a in get_args(tp)))
    if origin is Literal:
        allowed = get_args(tp)
        return lambda v: v if v in allowed and type(v) in _SCALARS else _fail(tp, v)
    if origin is tuple:
        return _tuple(get_args(tp))
    if origin is list:
        item = decoder_for(get_args(tp)[0])
        return lambda v: [item(x) for x in v] if type(v) is list else _fail(list, v)
    if origin is dict:
        key_t, val_t = get_args(tp)
        return _dict(decoder_for(key_t), decoder_for(val_t))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp)
    raise TypeError(f"no JSON decoder for {tp!r}")


def _fail(tp: Any, v: Any) -> Any:
    raise DecodeError(f"{str(v)[:80]!r} is not a {tp}")


def _str(v: Any) -> str:
    return v if type(v) is str else _fail(str, v)


def _int(v: Any) -> int:
    return v if type(v) is int else _fail(int, v)


def _bool(v: Any) -> bool:
    return v if type(v) is bool else _fail(bool, v)


def _none(v: Any) -> None:
    if v is not None:
        _fail(None, v)


def _float(v: Any) -> float:
    if type(v) in (int, float):
        return float(v)
    if type(v) is str and v in ("inf", "-inf", "nan"):
        return float(v)
    return _fail(float, v)  # type: ignore[no-any-return]


def _bytes(v: Any) -> bytes:
    if type(v) is str:
        return v.encode("utf-8")
    if type(v) is dict and set(v) == {BYTES_KEY} and type(v[BYTES_KEY]) is str:
        try:
            return base64.b64decode(v[BYTES_KEY], validate=True)
        except ValueError:
            pass
    return _fail(bytes, v)  # type: ignore[no-any-return]


_SCALAR_DECODERS: dict[Any, Decoder] = {str: _str, int: _int, bool: _bool, float: _float,
                                        bytes: _bytes, type(None): _none}


def _union(options: tuple[Decoder, ...]) -> Decoder:
    def decode(v: Any) -> Any:
        for d in options:
            try:
                return d(v)
            except DecodeError:
                continue
        return _fail("union", v)
    return decode


def _tuple(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = decoder_for(args[0])
        return lambda v: tuple(item(x) for x in v) if type(v) is list else _fail(tuple, v)
    items = tuple(decoder_for(a) for a in args)

    def decode(v: Any) -> tuple[Any, ...]:
        if type(v) is not list or len(v) != len(items):
            return _fail(tuple, v)  # type: ignore[no-any-return]
        return tuple(d(x) for d, x in zip(items, v, strict=True))
    return decode


def _dict(key: Decoder, val: Decoder) -> Decoder:
    def decode(v: Any) -> dict[Any, Any]:
        if type(v) is not dict:
            return _fail(dict, v)  # type: ignore[no-any-return]
        return {key(k): val(x) for k, x in v.items()}
    return decode


def _dataclass(cls: type) -> Decoder:
    hints = get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = frozenset(f.name for f in fields if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING)
    # built lazily: a dataclass may refer to itself through its fields
    decoders: dict[str, Decoder] = {}

    def decode(v: Any) -> Any:
        if type(v) is not dict or not required <= v.keys():
            return _fail(cls.__name__, v)
        if not decoders:
            decoders.update({f.name: decoder_for(hints[f.name]) for f in fields})
        try:
            return cls(**{k: decoders[k](x) for k, x in v.items() if k in decoders})
        except (TypeError, ValueError) as exc:
            raise DecodeError(f"{cls.__name__}: {exc}") from None
    return decode


__all__ = ["DecodeError", "decoder_for", "return_type", "to_jsonable"]
