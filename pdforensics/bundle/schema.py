"""Shapes of the JSON a bundle carries (manifest, result rows, discovery, analysis), checked by hand.

A bundle is untrusted input: every reader validates what it loads here first, so a wrong
type, a missing key, a string where a list belongs, an out-of-range number or a path that
leaves the bundle ends as one BundleError line naming the document and the key path
(`manifest.json: results[3].bytes: expected an integer, got 'x'`), never a traceback deep in
a reader. Keys not listed are allowed (newer tools add some); listed keys must have their type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pdforensics.errors import BundleError
from pdforensics.untrusted.read import UnsafePath, check_name, check_rel

Where = tuple[str | int, ...]  # ("manifest.json", "results", 3, "bytes"), formatted on failure
Check = Callable[[Any, Where], None]
MAX_EPOCH = 1e11  # year 5138: anything later is not a time this tool wrote
MAX_NUMBER = 1e15
MAX_INT = 2**53
MAX_ROOM = 2**64  # a Mooncake bootstrap room is a random uint64: an identifier, never arithmetic


class SchemaError(BundleError):
    """A bundle document does not have the shape its readers rely on."""


def where_text(where: Where) -> str:
    """`manifest.json: results[3].bytes`: the document, then the key path."""
    doc, *keys = where
    path = ""
    for k in keys:
        path += f"[{k}]" if isinstance(k, int) else (f".{k}" if path else str(k))
    return f"{doc}: {path}" if path else str(doc)


def _fail(where: Where, want: str, value: Any) -> SchemaError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return SchemaError(f"{where_text(where)}: expected {want}, got {type(value).__name__} {shown}")


def string(v: Any, where: Where) -> None:
    if type(v) is not str:
        raise _fail(where, "a string", v)


def boolean(v: Any, where: Where) -> None:
    if type(v) is not bool:
        raise _fail(where, "true or false", v)


def integer(v: Any, where: Where) -> None:
    if type(v) is not int or not -MAX_INT <= v <= MAX_INT:
        raise _fail(where, "an integer within ±2^53", v)


def room(v: Any, where: Where) -> None:
    """A bootstrap room: any 64-bit integer (most are beyond 2^53; Python's JSON keeps them exact)."""
    if type(v) is not int or not -MAX_ROOM < v < MAX_ROOM:
        raise _fail(where, "a 64-bit bootstrap room", v)


def count(v: Any, where: Where) -> None:
    if type(v) is not int or not 0 <= v <= MAX_INT:
        raise _fail(where, "a non-negative integer", v)


def number(v: Any, where: Where) -> None:
    if type(v) is int and -MAX_INT <= v <= MAX_INT:
        return
    if type(v) is not float or not -MAX_NUMBER <= v <= MAX_NUMBER:  # NaN fails both tests
        raise _fail(where, "a finite number", v)


def epoch(v: Any, where: Where) -> None:
    if type(v) not in (int, float) or not 0 <= v <= MAX_EPOCH:
        raise _fail(where, "a Unix time (seconds, 0 to 1e11)", v)


def rel_path(v: Any, where: Where) -> None:
    string(v, where)
    try:
        check_rel(v, "")
    except UnsafePath as exc:  # its text starts ": path ...": put the key path in front
        raise SchemaError(where_text(where) + str(exc)) from None


def name(v: Any, where: Where) -> None:
    string(v, where)
    try:
        check_name(v, "")
    except UnsafePath as exc:  # its text starts ": path ...": put the key path in front
        raise SchemaError(where_text(where) + str(exc)) from None


def optional(check: Check) -> Check:
    def run(v: Any, where: Where) -> None:
        if v is not None:
            check(v, where)
    return run


def list_of(check: Check) -> Check:
    def run(v: Any, where: Where) -> None:
        if type(v) is not list:
            raise _fail(where, "a list", v)
        for i, item in enumerate(v):
            check(item, (*where, i))
    return run


def dict_of(key: Check, value: Check) -> Check:
    def run(v: Any, where: Where) -> None:
        if type(v) is not dict:
            raise _fail(where, "an object", v)
        for k, item in v.items():
            key(k, (*where, f"key {str(k)[:60]!r}"))
            value(item, (*where, str(k)[:60]))
    return run


def obj(required: dict[str, Check], opt: dict[str, Check] | None = None) -> Check:
    req, extra = tuple(required.items()), tuple((opt or {}).items())

    def run(v: Any, where: Where) -> None:
        if type(v) is not dict:
            raise _fail(where, "an object", v)
        for k, check in req:
            if k not in v:
                raise SchemaError(f"{where_text(where)}: missing key {k!r}")
            check(v[k], (*where, k))
        for k, check in extra:
            if k in v:
                check(v[k], (*where, k))
    return run


def one_of(*checks: Check) -> Check:
    def run(v: Any, where: Where) -> None:
        errors = []
        for check in checks:
            try:
                check(v, where)
                return
            except SchemaError as exc:
                errors.append(str(exc))
        raise SchemaError(errors[0])
    return run


OPT_STR, OPT_INT = optional(string), optional(integer)


def scalar(v: Any, where: Where) -> None:
    """A string, a boolean, a finite number or null (a manifest row's `target` values)."""
    if v is None or type(v) in (str, bool):
        return
    if type(v) not in (int, float):
        raise _fail(where, "a string, number, boolean or null", v)
    number(v, where)


SCALAR = scalar
STRINGS = list_of(string)

RESULT_ROW = obj(
    required={"host": name, "source": string, "key": string, "argv": optional(STRINGS),
              "url": OPT_STR, "exit_status": OPT_INT, "duration_s": number, "started_at": epoch,
              "timed_out": boolean, "truncated": boolean, "bytes": count,
              "sha256": OPT_STR, "path": optional(rel_path), "error": OPT_STR},
    opt={"stderr": string, "target": dict_of(string, SCALAR), "read": OPT_STR},
)

HOST_META = obj(required={"name": name},
                opt={"address": OPT_STR, "reachable": boolean, "error": OPT_STR,
                     "simulated_gpu": boolean, "sudo": boolean, "fallbacks": STRINGS,
                     "runner": OPT_STR,
                     "jobs_run": optional(count), "jobs_not_run": optional(count),
                     "services": list_of(obj({}, {"role": OPT_STR, "port": OPT_INT}))})

MANIFEST = obj(required={}, opt={
    "format": integer, "tool": string, "tool_version": string, "cluster": string,
    "status": string, "started_at": string, "finished_at": string,
    "started_epoch": epoch, "finished_epoch": epoch, "partial_reasons": STRINGS,
    "hosts": list_of(HOST_META), "files": dict_of(rel_path, string),
    "results": list_of(RESULT_ROW), "interrupted": boolean,
})

PROCESS = obj(required={"pid": count}, opt={
    "ppid": optional(count), "state": OPT_STR, "start_epoch": optional(epoch),
    "threads": optional(count), "rss_kb": optional(count), "args": OPT_STR, "kind": OPT_STR,
    "role": OPT_STR, "port": OPT_INT, "rank": OPT_STR, "root_pid": optional(count)})

SERVICE = obj(required={"role": string, "kind": string, "port": integer, "address": string}, opt={
    "root_pid": optional(count), "pids": list_of(count), "metrics_port": OPT_INT,
    "unit": OPT_STR, "log_file": OPT_STR, "declared": boolean, "tp_size": count,
    "dp_size": count, "metrics_enabled": boolean})

DISCOVERY = obj(required={}, opt={
    "discovered": boolean, "at": optional(epoch), "notes": STRINGS, "missing": STRINGS,
    "services": list_of(SERVICE), "processes": list_of(PROCESS)})

EVIDENCE = one_of(string, obj({}, {"host": OPT_STR, "source": OPT_STR, "text": OPT_STR,
                                   "path": optional(rel_path), "line": OPT_STR}))

FINDING = obj(required={"key": string, "severity": string, "title": string}, opt={
    "evidence": list_of(EVIDENCE), "next_step": OPT_STR, "section": OPT_STR,
    "wedge": optional(boolean), "merged": STRINGS, "subject": OPT_STR, "since": optional(epoch),
    "outage": optional(boolean), "side": OPT_STR, "suspect": OPT_STR})

CLUE = obj(required={"key": string, "label": string, "text": string}, opt={
    "source": OPT_STR, "line": OPT_INT, "time": optional(number), "stage": OPT_STR,
    "side": OPT_STR, "role": OPT_STR, "host": OPT_STR, "rank": OPT_STR, "rids": STRINGS,
    "rooms": list_of(room), "suspect": OPT_STR, "wedge": optional(boolean),
    "strength": integer, "why": OPT_STR})

DIAGNOSIS = obj(required={"stage": string, "side": string, "root_cause": string,
                          "confidence": string, "headline": string}, opt={
    "suspect": OPT_STR, "wedge": optional(boolean),
    "claims": list_of(obj({"text": string}, {"clues": list_of(count)})),
    "chain": list_of(obj({"cause": count, "consequence": count}, {"why": OPT_STR})),
    "decide": STRINGS, "next_checks": STRINGS, "clues": list_of(CLUE), "notes": STRINGS})

ANALYSIS = obj(required={}, opt={
    "verdict": OPT_STR, "summary": OPT_STR, "missing": STRINGS, "findings": list_of(FINDING),
    "skipped": list_of(obj({}, {"rule": OPT_STR, "reason": OPT_STR})), "rules": STRINGS,
    "diagnosis": optional(DIAGNOSIS),
    "since": optional(obj({"at": epoch}, {"utc": OPT_STR, "evidence": OPT_STR})),
    "window": optional(obj({}, {"start": optional(epoch), "utc": OPT_STR, "how": OPT_STR,
                                "history": STRINGS})), "mitigate": OPT_STR, "diagnose": OPT_STR})


def validate(doc: Any, check: Check, where: str) -> Any:
    """`doc` unchanged when it has the shape, else SchemaError naming `where` and the key."""
    check(doc, (where,))
    return doc


def validate_manifest(doc: Any, where: str = "manifest.json") -> dict[str, Any]:
    validate(doc, MANIFEST, where)
    assert isinstance(doc, dict)
    return doc


def validate_row(doc: Any, where: str) -> dict[str, Any]:
    validate(doc, RESULT_ROW, where)
    assert isinstance(doc, dict)
    return doc


def validate_discovery(doc: Any, where: str) -> dict[str, Any]:
    validate(doc, DISCOVERY, where)
    assert isinstance(doc, dict)
    return doc


def validate_analysis(doc: Any, where: str = "analysis.json") -> dict[str, Any]:
    validate(doc, ANALYSIS, where)
    assert isinstance(doc, dict)
    return doc
