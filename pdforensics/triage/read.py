"""One loose file -> its kind (from the content) and what it holds, or why it cannot be read."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pdforensics import linear
from pdforensics.analysis.stacks_load import bare_pyspy_frames, parse_stack_text, sniff_format
from pdforensics.errors import ParseError
from pdforensics.parsers.beneath import Beneath
from pdforensics.parsers.flight_recorder import FrDump
from pdforensics.parsers.frames import ProcessDump, PyspyFailure, ThreadStack
from pdforensics.parsers.grep_prefix import grep_prefixed, strip_grep_prefix
from pdforensics.parsers.journal import SignatureHit, merge_hits, scan_log_signatures, written_by_sglang
from pdforensics.parsers.load_json import LoadDoc
from pdforensics.parsers.nvidia_smi import looks_like_nvidia_smi
from pdforensics.parsers.pastes import unwrap_paste
from pdforensics.parsers.pyspy import classify_pyspy_error
from pdforensics.parsers.pyspy_top import PyspyTop, parse_pyspy_top
from pdforensics.parsers.ray_prefix import ray_prefixed, strip_ray_prefix_runs
from pdforensics.parsers.tracebacks import is_py_bt
from pdforensics.triage import lower
from pdforensics.triage.logs import command_output, looks_like_log, split_by_writer
from pdforensics.triage.scrapes import Scrape, looks_like_metrics, read_scrapes
from pdforensics.triage.unwrap import unwrap

#: the kinds `triage` detects (the sidecar ``kind`` of tests/data/field)
KINDS = ("stacks", "goroutines", "pyspy_error", "metrics", "log", "server_info", *lower.KINDS)

_THREAD_LINE = linear.compile(r"^(?:.*\|\s?)?(?:Process \d+: |Thread (?:(?:0[xX][0-9A-Fa-f]+|\d+) )?\()",
                             linear.M)
# what py-spy itself prints first when it fails (never an arbitrary log line)
_PYSPY_FIRST = linear.compile(r"^(?:Error ?: |Permission Denied|Failed to |py-spy: |sudo: py-spy|"
                          r"\S*sh: (?:\d+: )?py-spy: |Timed out|error: )", linear.I)
# the py-spy command line an operator pasted above its output, or py-spy's own log lines
_PYSPY_CMD = linear.compile(r"(?:^|[\s>$#/\\`(])(?:sudo\s+(?:-\S+\s+)*)?py-spy(?:\.exe)?\s+"
                        r"(?:dump|record|top|--)|\bpy_spy::", linear.I)
# /server_info (and the old /get_server_info) carry these; /model_info carries none of them
_JSON_LIST = linear.compile(r"\[\s*(?:\{|\])")
_SERVER_INFO_KEYS = frozenset({"internal_states", "server_args", "disaggregation_mode",
                               "tp_size", "dp_size", "max_total_num_tokens"})


@dataclass(frozen=True)
class Artifact:
    """What one file held. ``kind``: what it was detected as (None: nothing triage reads);
    ``error``: why it could not be used (then nothing of it is analysed)."""

    path: str
    kind: str | None
    error: str | None = None
    dumps: tuple[ProcessDump, ...] = ()
    goroutines: tuple[ThreadStack, ...] = ()
    scrapes: tuple[Scrape, ...] = ()
    log_text: str = ""
    log_hits: tuple[SignatureHit, ...] = ()
    server_info: dict[str, Any] | None = None
    pyspy_failure: PyspyFailure | None = None
    taken_at: float | None = None
    size: int = 0  # bytes read
    text: str = ""  # the whole file as text (what the evidence readers see, read or not)
    data: bytes = b""  # the bytes, kept only when they are not text (a pickle: never unpickled)
    beneath: Beneath | None = None  # NCCL, kernel, transfer-engine, debugger lines in the text
    fr_dump: FrDump | None = None  # a Flight Recorder dump (pickle or JSON)
    top: PyspyTop | None = None  # a py-spy top screen
    load: LoadDoc | None = None  # /v1/loads, /get_load(s), /workers, /model_info
    json_doc: Any = None  # the load document as parsed (it becomes a fetch of a service)
    unread_stacks: str | None = None  # why the stack dumps the file holds could not be read
    processes: tuple[tuple[int, str], ...] = ()  # the worker prefixes stripped (ray_prefix)

    @property
    def usable(self) -> bool:
        return self.kind is not None and self.error is None

    @property
    def kinds(self) -> frozenset[str]:
        """Every kind of evidence the file gave: a watchdog log is a log and holds stacks or
        py-spy failures too; `kind` is the one the file is shown as."""
        found = {self.kind} if self.kind else set()
        if self.log_text and looks_like_log(self.log_text, bool(self.log_hits or self.beneath)):
            found.add("log")
        if self.threads:  # (stacks it holds but could not read are not counted: unread_stacks)
            found.add("stacks")
        if self.pyspy_failure is not None or any(d.error for d in self.dumps):
            found.add("pyspy_error")
        return frozenset(found | set(self.beneath_kinds))

    @property
    def beneath_kinds(self) -> tuple[str, ...]:
        """What the file holds from the layers beneath SGLang, by the name of the source it
        comes from: kernel (Xid, AER, OOM), nccl (watchdog, NCCL lines, RAS), transfer_engine
        (Mooncake, NIXL), gdb (gdb / cuda-gdb), flight_recorder (a dump, the analyzer)."""
        b = self.beneath
        found = []
        if b is not None and b.kernel:
            found.append("kernel")
        if b is not None and (b.watchdog or b.nccl or b.ras is not None):
            found.append("nccl")
        if b is not None and b.transfer:
            found.append("transfer_engine")
        if (any(d.kind in ("gdb", "cuda-gdb") for d in self.dumps)
                or (b is not None and (b.cuda or b.debugger_no_stack is not None))
                or (self.threads and is_py_bt(self.log_text[:200_000]))):  # gdb's py-bt
            found.append("gdb")
        if self.fr_dump is not None or (b is not None and b.fr_trace):
            found.append("flight_recorder")
        return tuple(found)

    @property
    def threads(self) -> int:
        return sum(t.count for d in self.dumps for t in d.threads)

    @property
    def result_size(self) -> int:
        """How much was read: threads, goroutines, samples, log lines or JSON keys."""
        if self.kind == "stacks":
            return self.threads
        if self.kind == "goroutines":
            return sum(g.count for g in self.goroutines)
        if self.kind == "metrics":
            return sum(len(s.snapshot) for s in self.scrapes)
        if self.kind == "log":
            return sum(map(bool, map(str.strip, self.log_text.split("\n"))))  # not blank
        if self.kind == "server_info":
            return len(self.server_info or {})
        if self.kind == lower.FLIGHT_RECORDER:
            return len(self.fr_dump.entries) if self.fr_dump is not None else (
                self.beneath.lines if self.beneath is not None else 0)
        if self.kind == lower.PYSPY_TOP:
            return len(self.top.rows) if self.top is not None else 0
        if self.kind == lower.LOAD:
            return max(1, len(self.load.ranks)) if self.load is not None else 0
        if self.kind == "pyspy_error":
            return 1 if self.pyspy_failure is not None else 0
        return 0


def looks_like_server_info(obj: object) -> bool:
    return isinstance(obj, dict) and bool(_SERVER_INFO_KEYS.intersection(obj))


def unreadable_json(text: str) -> str:
    """Why a JSON document does not read, in words: nested too deeply, cut short, or malformed."""
    try:
        obj = json.loads(text)
    except RecursionError:
        return ("the JSON is nested too deeply to read (deeper than Python's parser goes: a crafted or "
                "broken document, not one cut short)")
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            return "the JSON is cut short (a timeout or a byte cap?)"
        return f"the JSON is malformed ({exc.msg} at character {exc.pos})"
    except ValueError as exc:
        return f"the JSON is malformed ({exc})"
    return f"the JSON is a {type(obj).__name__}, not an object"


def _json(text: str) -> tuple[str | None, Any]:
    s = text.lstrip()
    if not s.startswith(("{", "[")):
        return None, None
    try:
        obj = json.loads(s)
    except (ValueError, RecursionError):
        if s.startswith("{") and any(f'"{k}"' in s[:4000] for k in _SERVER_INFO_KEYS):
            return "server_info", None  # cut short (a timeout, a byte cap)
        # py-spy --json cut short; a log line such as "[ TP0] ..." is not JSON at all
        return ("stacks", None) if _JSON_LIST.match(s) else (None, None)
    if isinstance(obj, list):
        if sniff_format(s) == "pyspy-json":
            return "stacks", obj
        return lower.json_kind(obj), obj
    special = lower.json_kind(obj)
    if special is not None:
        return special, obj
    return ("server_info", obj) if looks_like_server_info(obj) else (None, obj)


def _nonblank(text: str, most: int) -> list[str]:
    """The first ``most`` lines of ``text`` (split on ``\\n``) that are not blank, stripped
    (a large text is not split past them)."""
    out: list[str] = []
    start = 0
    while len(out) < most and start <= len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        line = text[start:end].strip()
        if line:
            out.append(line)
        start = end + 1
    return out


def _pyspy_error(text: str) -> PyspyFailure | None:
    """A py-spy failure, only when the text starts the way py-spy's own messages do."""
    lines = _nonblank(text, 301)
    if not lines or len(lines) > 300:
        return None
    named = any(_PYSPY_CMD.search(ln) for ln in lines[:8])
    if not (_PYSPY_FIRST.match(lines[0]) or named):
        return None
    found = classify_pyspy_error(text, 1)
    if found is not None and found.reason == "unknown" and not named \
            and "py-spy" not in text.lower() and "py_spy" not in text:
        return None  # "Failed to ..." of another program (a transfer engine), not py-spy's
    return found


def detect_kind(text: str) -> str | None:
    """The kind of ``text`` from its content, or None when it is none of KINDS."""
    body = unwrap(text).text
    kind, obj = _json(body)
    if kind is not None or obj is not None:
        return kind
    try:
        fmt = sniff_format(text)
    except Exception:  # a sniffer must never stop triage: treat as not a stack dump
        fmt = None
    if fmt == "pyspy-json":
        fmt = None  # _json above already took every py-spy JSON document
    if fmt == "goroutines":
        return "goroutines"
    if fmt in ("watchdog", "faulthandler", "pyspy-json") or (fmt is not None and fmt != "pyspy"):
        return "stacks"
    if fmt == "pyspy" and (_THREAD_LINE.search(text) or bare_pyspy_frames(text)):
        return "stacks"
    special = lower.text_kind(text)
    if special is not None:
        return special
    if _pyspy_error(body) is not None:
        return "pyspy_error"
    if looks_like_metrics(text):
        return "metrics"
    if looks_like_log(text, written_by_sglang(text) or lower.beneath_of(text) is not None) \
            or command_output(text) or looks_like_nvidia_smi(text):
        return "log"
    return None


def _first_line(text: str) -> str:
    first = next((ln.strip() for ln in text.split("\n") if ln.strip()), "")
    return first[:120]


def read_text(path: str, text: str, size: int, data: bytes = b"") -> Artifact:
    """Detect the kind of ``text`` and read it; an error names what went wrong. The text
    (and the bytes of a binary file) stay on the artifact for the evidence readers; a log
    printed through Ray (every line prefixed ``(Actor pid=N)``) or grepped from several files
    (``name.log:``) is read without the prefix, and
    a paste quoted in Markdown (every line opened by ``>``) without its quote marks, and one
    with an editor's line numbers without them."""
    if grep_prefixed(text):  # (grep's file names first: Ray's prefix may follow them)
        text = strip_grep_prefix(text)
    processes: tuple[tuple[int, str], ...] = ()
    if ray_prefixed(text):
        text, processes = strip_ray_prefix_runs(text)
    else:
        text = unwrap_paste(text)
    art = _read_text(path, text, size)
    return replace(art, text=text, data=data, processes=processes)


def _read_text(path: str, text: str, size: int) -> Artifact:
    if not text.strip():
        return Artifact(path, None, "empty file", size=size)
    kind = detect_kind(text)
    if kind is None:
        _, obj = _json(unwrap(text).text)
        what = (f"JSON, but not /server_info (keys: {', '.join(sorted(obj)[:8])})"
                if isinstance(obj, dict) else "not a format triage reads")
        return Artifact(path, None, f"{what} (first line: {_first_line(text)!r})", size=size)
    try:
        return _read(path, kind, text, size)
    except ParseError as exc:
        if (kind == "stacks" and not _THREAD_LINE.search(text)
                and _pyspy_error(unwrap(text).text) is not None):
            return _read(path, "pyspy_error", text, size)  # py-spy said why it has no dump
        if kind == "stacks" and (looks_like_log(text, written_by_sglang(text))
                                 or "Fatal Python error: " in text[:100_000]):
            # a log whose dump could not be read (a second logger's prefix on every frame
            # line, two dumps interleaved in one terminal), a crash header with a C stack and
            # no thread: its lines are still evidence, and why its stacks were not read is said
            return replace(_read(path, "log", text, size), unread_stacks=str(exc))
        return Artifact(path, kind, str(exc), size=size)


def _read(path: str, kind: str, text: str, size: int) -> Artifact:
    art = _read_kind(path, kind, text, size)
    if art.usable and art.kind in ("stacks", "log", "pyspy_error", lower.FLIGHT_RECORDER):
        beneath = lower.beneath_of(text)
        if beneath is not None:
            art = dataclasses.replace(art, beneath=beneath, log_text=art.log_text or text)
    return art


def _read_lower(path: str, kind: str, text: str, size: int) -> Artifact:
    """flight_recorder (JSON or the analyzer's text), pyspy_top, load."""
    u = unwrap(text)
    if kind == lower.PYSPY_TOP:
        top = parse_pyspy_top(text)
        if top is None:
            return Artifact(path, kind, "no py-spy top screen could be read", size=size)
        return Artifact(path, kind, top=top, size=size)
    _, obj = _json(u.text)
    if kind == lower.LOAD:
        if obj is None:
            return Artifact(path, kind, "the JSON is cut short (a timeout or a byte cap?)", size=size)
        return Artifact(path, kind, load=lower.load_from_json(obj), json_doc=obj,
                        taken_at=u.taken_at, size=size)
    if obj is not None:
        return Artifact(path, kind, fr_dump=lower.fr_from_json(obj, path), size=size)
    return Artifact(path, kind, log_text=text, size=size)  # the analyzer's report: beneath


def _read_kind(path: str, kind: str, text: str, size: int) -> Artifact:
    if kind in lower.KINDS:
        return _read_lower(path, kind, text, size)
    if kind == "stacks":
        dumps = parse_stack_text(text)
        art = Artifact(path, kind, None, dumps=dumps, log_text=text,
                       log_hits=_log_hits(text), taken_at=unwrap(text).taken_at,
                       size=size)
        if art.threads:
            return art
        failed = [d.error for d in dumps if d.error]
        if failed:  # every dump in it failed: the file says why py-spy could not run
            return Artifact(path, "pyspy_error", pyspy_failure=classify_pyspy_error(failed[0], 1),
                            dumps=dumps, log_text=text, log_hits=art.log_hits, size=size)
        if _THREAD_LINE.search(text):  # a dump is plainly there: say it could not be read
            return Artifact(path, kind, "no thread could be read from the dump in it", size=size)
        if _pyspy_error(unwrap(text).text) is not None:
            return _read(path, "pyspy_error", text, size)
        if looks_like_log(text, bool(art.log_hits) or lower.beneath_of(text) is not None):
            return _read(path, "log", text, size)  # a log naming a dump it lacks
        return Artifact(path, kind, "no thread found", size=size)
    if kind == "goroutines":
        dumps = parse_stack_text(text, "goroutines")
        gs = tuple(t for d in dumps for t in d.threads)
        if not gs:
            return Artifact(path, kind, "no goroutine found", size=size)
        return Artifact(path, kind, goroutines=gs, size=size)
    if kind == "pyspy_error":
        return Artifact(path, kind, pyspy_failure=_pyspy_error(unwrap(text).text), size=size)
    if kind == "metrics":
        scrapes = read_scrapes(text)
        if not scrapes:
            return Artifact(path, kind, "no sample could be read", size=size)
        return Artifact(path, kind, scrapes=scrapes, size=size)
    if kind == "server_info":
        u = unwrap(text)
        _, obj = _json(u.text)
        if not isinstance(obj, dict):
            return Artifact(path, kind, unreadable_json(u.text), size=size)
        return Artifact(path, kind, server_info=obj, taken_at=u.taken_at, size=size)
    return Artifact(path, "log", log_text=text, log_hits=_log_hits(text), size=size)


def _log_hits(text: str) -> tuple[SignatureHit, ...]:
    """The signatures of a log, read per writer when several services wrote it (the readings
    the triage view and the evidence readers then take from the cache, not a second scan of
    the whole text)."""
    groups = split_by_writer(text)
    if len(groups) == 1:
        return scan_log_signatures(text)
    return merge_hits(h for part in groups.values() for h in scan_log_signatures(part))


def read_path(path: str) -> Artifact:
    """Read one file (``-`` is stdin); an unreadable one comes back with its error."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        return Artifact(path, None, f"cannot read: {exc.strerror or exc}")
    return read_bytes(path, data)


def read_bytes(path: str, data: bytes) -> Artifact:
    """A file's bytes: a Flight Recorder pickle (read without running it), else its text. The
    bytes of a binary file stay on the artifact for the evidence readers."""
    if lower.binary_kind(data) is not None:
        try:
            art = Artifact(path, lower.FLIGHT_RECORDER, fr_dump=lower.read_fr_file(data, path),
                           size=len(data))
        except ParseError as exc:
            art = Artifact(path, lower.FLIGHT_RECORDER, str(exc), size=len(data))
        return dataclasses.replace(art, data=data)
    text = data.decode("utf-8", errors="replace")
    return read_text(path, text, len(data), data if _binary(text) else b"")


def _binary(text: str) -> bool:
    """Bytes that are not text: a NUL, or more than one character in a hundred undecodable
    near the start (a log with a few stray bytes -- a model's broken token in a request
    line -- stays a log)."""
    head = text[:4096]
    return "\x00" in head or head.count("\ufffd") * 100 > max(len(head), 1)


def _member(name: str, data: bytes) -> Artifact:
    text = data.decode("utf-8", errors="replace")
    return read_text(name, text, len(data), data if _binary(text) else b"")


def read_paths(path: str) -> list[Artifact]:
    """One file's artifact, or one per file of a .tar.gz (read with the bundle reader's
    checks: no link, no path out, size caps, a bomb refused). A bundle's archive gives the
    raw/ evidence triage reads (logs, scrapes, dumps, /server_info); its other files (ps,
    environ, nvidia-smi ...) are for `pdforensics analyze ARCHIVE` and are left out quietly."""
    from pdforensics.errors import BundleError
    from pdforensics.untrusted.archive import archive_files, is_archive

    if path == "-" or not is_archive(path):
        return [read_path(path)]
    try:
        members = list(archive_files(Path(path)))
    except BundleError as exc:
        return [Artifact(path, None, str(exc))]
    bundle = any(n.count("/") == 1 and n.endswith("/manifest.json") for n, _ in members)
    out = [_member(f"{path}:{name}", data) for name, data in members
           if not bundle or name.split("/", 2)[1:2] == ["raw"]]
    if bundle:
        out = [a for a in out if a.usable]
    return out or [Artifact(path, None, "the archive holds no file triage reads")]


def log_groups(art: Artifact) -> Mapping[str, str]:
    """The log's lines per writer (compose service / journald identifier)."""
    return split_by_writer(art.log_text) if art.log_text else {}


__all__ = ["Artifact", "KINDS", "detect_kind", "read_bytes", "read_path", "read_paths", "read_text", "log_groups",
           "looks_like_server_info"]
