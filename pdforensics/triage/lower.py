"""Loose files from beneath SGLang: which kind they are and what they hold.

Flight Recorder dumps (a pickle -- read without running it -- its JSON form, or the
``fr_trace`` analyzer's report), ``py-spy top`` screens, load documents (``/v1/loads``,
``/get_load``, the router's ``/get_loads`` and ``/workers``, ``/model_info``), and the lines
`parsers.beneath` reads (NCCL, kernel, transfer engine, debugger output), which make a file
a log even without a timestamp on its lines.
"""

from __future__ import annotations

from typing import Any

from pdforensics.errors import ParseError
from pdforensics.parsers.beneath import Beneath, read_beneath
from pdforensics.parsers.flight_recorder import (
    FrDump,
    dump_from_doc,
    looks_like_fr,
    looks_like_fr_trace,
    parse_fr_bytes,
    rank_from_name,
)
from pdforensics.parsers.load_json import LoadDoc, read_load_doc
from pdforensics.parsers.pyspy_top import looks_like_pyspy_top
from pdforensics.parsers.safe_pickle import looks_like_pickle

FLIGHT_RECORDER = "flight_recorder"
PYSPY_TOP = "pyspy_top"
LOAD = "load"
KINDS = (FLIGHT_RECORDER, PYSPY_TOP, LOAD)


def binary_kind(data: bytes) -> str | None:
    """A Flight Recorder pickle (the only binary file triage reads)."""
    return FLIGHT_RECORDER if looks_like_pickle(data) else None


def read_fr_file(data: bytes, path: str) -> FrDump:
    """A Flight Recorder dump from a file's bytes (ParseError when it is none)."""
    return parse_fr_bytes(data, path)


def json_kind(obj: Any) -> str | None:
    """flight_recorder or load, for a parsed JSON document; None for anything else."""
    if looks_like_fr(obj):
        return FLIGHT_RECORDER
    if isinstance(obj, dict) and ("internal_states" in obj or "server_args" in obj):
        return None  # /server_info
    return LOAD if read_load_doc(obj) is not None else None


def fr_from_json(obj: Any, path: str) -> FrDump:
    return dump_from_doc(obj, rank_from_name(path))


def load_from_json(obj: Any) -> LoadDoc:
    doc = read_load_doc(obj)
    if doc is None:
        raise ParseError("not a load document")
    return doc


def text_kind(text: str) -> str | None:
    """pyspy_top or flight_recorder (the analyzer's text report), from a text's content."""
    if looks_like_pyspy_top(text):
        return PYSPY_TOP
    if looks_like_fr_trace(text):
        return FLIGHT_RECORDER
    return None


def beneath_of(text: str) -> Beneath | None:
    """What `parsers.beneath` reads in ``text``; None when nothing."""
    got = read_beneath(text)
    return got if got else None
