"""PyTorch Flight Recorder dumps: per rank the last collectives and their state.

torch writes one dump per rank (``TORCH_NCCL_DUMP_ON_TIMEOUT``, into
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` + rank; ``TORCH_FR_*`` names since 2.7; or on request):
a pickle of plain containers (read here with `safe_pickle.load_plain`, never
``pickle.load``), or the same document as JSON. Keys: ``version``, ``pg_config`` (process
groups and their ranks), ``pg_status`` (last enqueued / started / completed collective per
group), ``entries`` (one per collective or p2p op: ``collective_seq_id``,
``profiling_name`` such as ``nccl:all_reduce``, sizes, ``state`` scheduled / started /
completed, ``retired``, ``frames`` of the Python call in the pickle form).

`compare_dumps` reads several ranks' dumps the way PyTorch's own analyzer (``python -m
torch.distributed.flight_recorder.fr_trace``) does: per process group and collective
sequence number, the expected ranks that have no entry for it did not join it; ranks whose
entry differs (another collective, other sizes) mismatch. The rank of a dump comes from the
document (``rank``) or the file name's trailing digits, as the analyzer reads it.
`parse_fr_trace_text` reads the analyzer's own text report. Never raises on arbitrary input
except ParseError.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.parsers.safe_pickle import load_plain, looks_like_pickle

_TRAILING_RANK = linear.compile(r"(\d{1,7})(?:\.(?:json|pkl|pickle))?$")
_NAMED_RANK = linear.compile(r"rank[_-]?(\d{1,7})", linear.I)
_INTS = linear.compile(r"-?\d{1,7}")
_FR_COLL_LINE = linear.compile(r"^Collective \d{1,12} at entry \d{1,12} errors", linear.M)
_KEYS = frozenset({"entries", "pg_status", "pg_config", "version"})


@dataclass(frozen=True)
class FrEntry:
    seq: int | None  # collective_seq_id (p2p ops: p2p_seq_id with is_p2p)
    op: str  # profiling_name: "nccl:all_reduce"
    pg: str  # process group name
    pg_desc: str
    state: str  # scheduled | started | completed
    retired: bool
    p2p: bool
    input_sizes: str  # as printed, for comparison
    output_sizes: str
    frame: str  # the innermost Python frame that called it ("" when none)
    timeout_ms: int | None
    created_ns: int | None = None  # time_created_ns: when the rank enqueued it (its host's clock)


@dataclass(frozen=True)
class FrStatus:
    pg: str
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None


@dataclass(frozen=True)
class FrDump:
    """One rank's dump."""

    rank: int | None
    version: str
    entries: tuple[FrEntry, ...]
    status: tuple[FrStatus, ...]
    groups: tuple[tuple[str, str, tuple[int, ...]], ...]  # (name, desc, ranks)
    pickled: bool

    @property
    def newest_epoch(self) -> float | None:
        """When the rank enqueued its newest entry (epoch seconds on its host's clock): the
        dump tells about no time after it. None when no entry is dated."""
        times = [e.created_ns for e in self.entries if e.created_ns]
        return max(times) / 1e9 if times else None

    def pending(self) -> tuple[FrEntry, ...]:
        """Entries not completed and not retired: where this rank waits."""
        return tuple(e for e in self.entries if not e.retired and e.state != "completed")


def looks_like_fr(obj: object) -> bool:
    return isinstance(obj, dict) and "entries" in obj and len(_KEYS.intersection(obj)) >= 3


def rank_from_name(name: str) -> int | None:
    """``nccl_trace_rank_3`` / ``fr_rank3_hung.json`` -> 3; else trailing digits, as the
    analyzer reads them (``<prefix><rank>``)."""
    base = name.rsplit("/", 1)[-1]
    named = _NAMED_RANK.findall(base)
    if named:
        return int(named[-1])
    m = _TRAILING_RANK.search(base)
    return int(m.group(1)) if m else None


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit() and len(v) < 20:
        return int(v)
    return None


def _ns(v: object) -> int | None:
    """A nanosecond time (positive, before the year 2200), else None."""
    if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 7_258_118_400 * 10**9:
        return v
    return None


def _ranks(v: object) -> tuple[int, ...]:
    if isinstance(v, str):
        return tuple(int(x) for x in _INTS.findall(v[:100000]))
    if isinstance(v, list | tuple):
        return tuple(x for x in (_int(y) for y in v[:100000]) if x is not None)
    return ()


def _entry(e: object) -> FrEntry | None:
    if not isinstance(e, dict):
        return None
    pg = e.get("process_group")
    name, desc = (str(pg[0]), str(pg[1])) if isinstance(pg, list | tuple) and len(pg) >= 2 else (
        str(pg) if pg is not None else "", "")
    frames = e.get("frames")
    top = frames[0] if isinstance(frames, list) and frames and isinstance(frames[0], dict) else {}
    frame = (f"{top.get('name', '')} ({top.get('filename', '')}:{top.get('line', '')})"
             if top else "")
    p2p = e.get("is_p2p") is True
    return FrEntry(seq=_int(e.get("p2p_seq_id") if p2p else e.get("collective_seq_id")),
                   op=str(e.get("profiling_name") or "?"), pg=name, pg_desc=desc,
                   state=str(e.get("state") or "?"), retired=e.get("retired") is True, p2p=p2p,
                   input_sizes=str(e.get("input_sizes"))[:200],
                   output_sizes=str(e.get("output_sizes"))[:200], frame=frame[:300],
                   timeout_ms=_int(e.get("timeout_ms")), created_ns=_ns(e.get("time_created_ns")))


def _status(pg_status: object) -> tuple[FrStatus, ...]:
    if not isinstance(pg_status, dict):
        return ()
    out = []
    for pg, st in pg_status.items():
        if isinstance(st, dict):
            out.append(FrStatus(str(pg), _int(st.get("last_enqueued_collective")),
                                _int(st.get("last_started_collective")),
                                _int(st.get("last_completed_collective"))))
    return tuple(out)


def _groups(pg_config: object) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    if not isinstance(pg_config, dict):
        return ()
    return tuple((str(k), str(v.get("desc", "")), _ranks(v.get("ranks")))
                 for k, v in pg_config.items() if isinstance(v, dict))


def dump_from_doc(doc: object, rank: int | None = None, pickled: bool = False) -> FrDump:
    """A dump from its document (the unpickled dict or the parsed JSON)."""
    if not looks_like_fr(doc):
        raise ParseError("not a Flight Recorder dump (no entries / pg_status / pg_config)")
    assert isinstance(doc, dict)
    entries = doc.get("entries")
    parsed = [x for x in (_entry(e) for e in entries[:100000]) if x is not None] if isinstance(
        entries, list) else []
    own = _int(doc.get("rank"))
    return FrDump(own if own is not None else rank, str(doc.get("version", "?"))[:20],
                  tuple(parsed), _status(doc.get("pg_status")), _groups(doc.get("pg_config")),
                  pickled)


def parse_fr_bytes(data: bytes, name: str = "") -> FrDump:
    """A dump file's bytes (pickle or JSON); ``name``: its file name, for the rank."""
    rank = rank_from_name(name) if name else None
    if looks_like_pickle(data):
        return dump_from_doc(load_plain(data), rank, pickled=True)
    try:
        doc = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise ParseError("neither a pickle nor JSON") from None
    return dump_from_doc(doc, rank)


@dataclass(frozen=True)
class FrFinding:
    """A collective that not every expected rank joined, or joined differently."""

    pg: str
    seq: int
    op: str
    missing: tuple[int, ...]  # expected ranks with a dump but no entry for it
    mismatched: tuple[tuple[int, str], ...]  # (rank, what differs)
    joined: tuple[int, ...]
    no_dump: tuple[int, ...]  # expected ranks whose dump was not given


def _expected(dumps: Sequence[FrDump], pg: str, joined: set[int]) -> set[int]:
    for d in dumps:
        for name, _desc, ranks in d.groups:
            if name == pg and ranks:
                return set(ranks)
    # pg_config does not name it (gloo keys it by ""): every rank that dumped is expected
    return {d.rank for d in dumps if d.rank is not None} | joined


def compare_dumps(dumps: Sequence[FrDump]) -> tuple[FrFinding, ...]:
    """The first collective per process group that not every expected rank joined the same
    way (the analyzer stops pairing a group at its first mismatch)."""
    ranked = [d for d in dumps if d.rank is not None]
    have = {d.rank for d in ranked}
    by: dict[tuple[str, int], dict[int, FrEntry]] = {}
    for d in ranked:
        assert d.rank is not None
        for e in d.entries:
            if e.seq is not None and not e.p2p:
                by.setdefault((e.pg, e.seq), {})[d.rank] = e
    out: list[FrFinding] = []
    done: set[str] = set()
    for (pg, seq) in sorted(by, key=lambda k: (k[0], k[1])):
        if pg in done:
            continue
        got = by[(pg, seq)]
        expected = _expected(ranked, pg, set(got))
        missing = sorted((expected - set(got)) & have)
        first = got[min(got)]
        mism = [(r, f"{e.op} {e.input_sizes}") for r, e in sorted(got.items())
                if (e.op, e.input_sizes, e.output_sizes) != (first.op, first.input_sizes,
                                                             first.output_sizes)]
        if missing or mism:
            out.append(FrFinding(pg, seq, first.op, tuple(missing), tuple(mism),
                                 tuple(sorted(got)), tuple(sorted(expected - have))))
            done.add(pg)
    return tuple(out)


# -- the analyzer's own text report -------------------------------------------------------
_FR_COLL = linear.compile(r"^Collective (\d{1,12}) at entry (\d{1,12}) errors")
_FR_NOT_ALL = linear.compile(r"Not all ranks joining collective,? sequence number:? (\d{1,12})")
_FR_MISSING = "missing ranks: {"
_FR_CULPRIT = linear.compile(r"Culprit rank (\d{1,7})")
_FR_ERRTYPE = linear.compile(r"Error type: (\w{1,60})")
_FR_FIELD = linear.compile(r"^(group info|collective|input sizes|output sizes|world size|expected ranks|"
                       r"collective state): (.*)$")


@dataclass(frozen=True)
class FrTraceReport:
    """What ``fr_trace`` printed about one collective."""

    lineno: int
    collective: int | None
    fields: tuple[tuple[str, str], ...]
    missing: tuple[int, ...]
    culprit: int | None
    error_type: str | None
    lines: tuple[str, ...]


def looks_like_fr_trace(text: str) -> bool:
    head = text[:20000]
    return bool(_FR_COLL_LINE.search(head)
                or "Not all ranks joining collective" in head)


def parse_fr_trace_text(text: str) -> tuple[FrTraceReport, ...]:
    """Each collective the analyzer reported, with its missing ranks and culprit."""
    out: list[FrTraceReport] = []
    cur: dict[str, Any] | None = None
    for no, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        m = _FR_COLL.match(line) or _FR_NOT_ALL.search(line)
        if m is not None:
            if cur is not None:
                out.append(_fr_report(cur))
            cur = {"no": no, "coll": int(m.group(1)), "fields": [], "missing": (), "culprit": None,
                   "etype": None, "lines": [line]}
            continue
        if cur is None:
            continue
        cur["lines"].append(line)
        if (f := _FR_FIELD.match(line)) is not None:
            cur["fields"].append((f.group(1), f.group(2)[:300]))
        at = line.find(_FR_MISSING)
        if at >= 0:
            inside = line[at + len(_FR_MISSING):].partition("}")[0][:100000]
            cur["missing"] = tuple(int(x) for x in inside.replace(",", " ").split()
                                   if x.isdigit() and len(x) < 8)
        if (c := _FR_CULPRIT.search(line)) is not None:
            cur["culprit"] = int(c.group(1))
        if (t := _FR_ERRTYPE.search(line)) is not None:
            cur["etype"] = t.group(1)
    if cur is not None:
        out.append(_fr_report(cur))
    return tuple(out)


def _fr_report(cur: dict[str, Any]) -> FrTraceReport:
    return FrTraceReport(cur["no"], cur["coll"], tuple(cur["fields"]), cur["missing"],
                         cur["culprit"], cur["etype"], tuple(cur["lines"][:60]))


def parse_fr_list(text: str) -> tuple[str, ...]:
    """The dump files of a ``find DIR -name PREFIX*`` listing: absolute paths whose name ends
    in a rank number (``nccl_trace_rank_3``, torch's ``<prefix><rank>``), nothing else (a
    listing is a host's text: a path with a newline, ``..`` or no rank is not a dump)."""
    out = []
    for line in text.split("\n"):
        p = line.rstrip("\r")
        base = p.rsplit("/", 1)[-1]
        if (p.startswith("/") and "/../" not in p and base and len(p) < 4096
                and _TRAILING_RANK.search(base) is not None and base[-1].isdigit()):
            out.append(p)
    return tuple(dict.fromkeys(out))
