"""Log text (journalctl, SGLang log files, docker compose logs) -> signature hits.

A log is a grep target, not a grammar: every line is read, lines that match no signature
are ignored, so this never raises. Timestamps come from the line's own prefix; a line
without one (a traceback frame) inherits the previous line's. Timestamps without a zone
(SGLang's ``[2026-12-02 10:20:28 TP0]``) are read as UTC.
"""

from __future__ import annotations

import calendar
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Kind = Literal["cause", "consequence"]


@dataclass(frozen=True)
class Signature:
    """One known log string: stable key, regex, cause or consequence, one-line meaning."""

    key: str
    pattern: re.Pattern[str]
    kind: Kind
    description: str
    literal: str  # a lower-case substring every match contains (cheap prefilter)


@dataclass(frozen=True)
class SignatureHit:
    """How often one signature matched, when first and last, a few sample lines, ranks."""

    key: str
    kind: Kind
    count: int
    first_epoch: float | None
    last_epoch: float | None
    samples: tuple[str, ...]
    ranks: tuple[str, ...]


def _sig(key: str, regex: str, kind: Kind, description: str, literal: str) -> Signature:
    return Signature(key, re.compile(regex, re.IGNORECASE), kind, description, literal.lower())


#: The signature table, in report order.
SIGNATURES: tuple[Signature, ...] = (
    _sig("KV_BOOTSTRAP_TIMEOUT", r"timed out after.*KVPoll\.Bootstrapping", "cause",
         "a request waited too long for the KV bootstrap handshake", "timed out after"),
    _sig("KV_WAITING_TIMEOUT", r"timed out after.*KVPoll\.WaitingForInput", "cause",
         "a request waited too long for KV cache transfer input", "timed out after"),
    _sig("DECODE_TRANSFER_FAILED", r"Decode transfer failed", "cause",
         "the decode side saw a KV transfer fail", "decode transfer failed"),
    _sig("PREFILL_BOOTSTRAP_FAILED", r"Prefill bootstrap failed", "cause",
         "the prefill side could not bootstrap a request with decode", "prefill bootstrap failed"),
    _sig("KV_TRANSFER_ERROR", r"KVTransferError", "cause",
         "the KV transfer engine raised an error", "kvtransfererror"),
    _sig("LOST_PREFILL_CONNECTION", r"Lost connection with prefill instance", "cause",
         "decode lost its heartbeat with a prefill instance", "lost connection with prefill"),
    _sig("WATCHDOG_TIMEOUT", r"Watchdog timeout", "cause",
         "a forward batch ran past --watchdog-timeout", "watchdog timeout"),
    _sig("PYSPY_DUMP", r"Pyspy dump for PID", "consequence",
         "the watchdog embedded a py-spy dump in the log", "pyspy dump for pid"),
    _sig("HEALTH_CHECK_FAILED", r"Health check failed", "consequence",
         "a /health probe failed", "health check failed"),
    _sig("ABORTED_BY_ABORTREQ", r"Aborted by AbortReq\.", "consequence",
         "requests were aborted (a consequence of timeouts or client disconnects)",
         "aborted by abortreq"),
    _sig("SCHEDULER_EXCEPTION", r"Scheduler hit an exception", "cause",
         "a scheduler process crashed", "scheduler hit an exception"),
    _sig("PYTHON_TRACEBACK", r"Traceback \(most recent call last\)", "cause",
         "a Python exception traceback", "traceback (most recent call last)"),
    _sig("CUDA_ERROR", r"(?-i:CUDA error)", "cause", "a CUDA runtime error", "cuda error"),
    _sig("NCCL_ERROR", r"NCCL (?:error|WARN)|ncclSystemError|ncclInternalError|"
         r"ncclUnhandledCudaError|ncclRemoteError", "cause", "a NCCL collective error", "nccl"),
    _sig("OUT_OF_MEMORY", r"out of memory|OutOfMemoryError", "cause",
         "a (GPU or host) out-of-memory error", "memory"),
)

_MAX_SAMPLES = 5
_SAMPLE_CHARS = 500

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_COMPOSE_RE = re.compile(r"^[A-Za-z0-9][\w.-]*\s+\| ?")
_ISO_RE = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?"
    r"(Z|[+-]\d\d:?\d\d| ?UTC)?"
)
_SGLANG_RE = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?((?: [A-Z]{1,3}\d+)*)\]"
)
_DMESG_T_RE = re.compile(
    r"^\[(?:[A-Z][a-z]{2}) ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]"
)
_RANK_ONLY_RE = re.compile(r"\[((?:(?:DP|TP|PP|EP|CP)\d+ ?)+)\]")


def _epoch(parts: Sequence[str | None]) -> float | None:
    """Epoch of (year, month, day, hour, min, sec, fraction, zone) strings."""
    return _epoch_of(tuple((list(parts) + [None] * 8)[:8]))


@lru_cache(maxsize=4096)
def _epoch_of(parts: tuple[str | None, ...]) -> float | None:
    """_epoch, memoised: a log's lines share their seconds."""
    y, mo, d, h, mi, s, frac, zone = parts
    try:
        yi, moi, di, hi, mii, si = (int(x or "") for x in (y, mo, d, h, mi, s))
    except ValueError:
        return None
    if not (1 <= moi <= 12 and 1 <= di <= 31 and hi <= 23 and mii <= 59 and si <= 60
            and 1970 <= yi <= 9999):
        return None
    t = float(calendar.timegm((yi, moi, di, hi, mii, si, 0, 0, 0)))
    if frac:
        t += int(frac) / 10 ** len(frac)
    z = (zone or "").strip()
    if z and z not in ("Z", "UTC"):
        sign = 1 if z[0] == "+" else -1
        digits = z[1:].replace(":", "")
        t -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    return t


def strip_compose_prefix(line: str) -> str:
    """Drop a docker compose ``service-1  | `` prefix when present."""
    m = _COMPOSE_RE.match(line)
    return line[m.end():] if m else line


def parse_log_timestamp(line: str) -> float | None:
    """Epoch of the line's leading timestamp (journal short-iso, ISO, SGLang, dmesg -T)."""
    line = strip_compose_prefix(line)
    head = line[:80]
    m = _SGLANG_RE.match(head)
    if m:
        return _epoch(m.groups()[:7])
    m = _ISO_RE.match(head)
    if m:
        return _epoch(m.groups())
    m = _DMESG_T_RE.match(head)
    if m:
        mon = _MONTHS.get(m.group(1).lower())
        if mon is None:
            return None
        return _epoch((m.group(6), str(mon), m.group(2), m.group(3), m.group(4), m.group(5)))
    return None


def parse_rank(line: str) -> str | None:
    """The SGLang rank of a line (``TP0``, ``DP1_TP3``) from its ``[... TPn]`` prefix."""
    m = _SGLANG_RE.search(line[:300])
    if m and m.group(8):
        return "_".join(m.group(8).split())
    m = _RANK_ONLY_RE.search(line[:300])
    if m:
        return "_".join(m.group(1).split())
    return None


@dataclass
class _Acc:
    count: int = 0
    first: float | None = None
    last: float | None = None


# A capture scans each log twice, the same text both times: for parsed/ while it collects and
# for the analysis after. The answer (a few counts and samples) is kept by the text's digest.
_SCANNED: OrderedDict[tuple[bytes, float | None], tuple[SignatureHit, ...]] = OrderedDict()
_SCANNED_MAX = 256
_SCANNED_LOCK = threading.Lock()


def scan_log_signatures(text: str, since_epoch: float | None = None) -> tuple[SignatureHit, ...]:
    """Count SIGNATURES in ``text``; with ``since_epoch`` skip lines known to be older.

    Lines whose time is unknown (no timestamp seen yet) are counted. Hits come back in
    SIGNATURES order, one per signature that matched.
    """
    key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(),
           since_epoch)
    with _SCANNED_LOCK:
        known = _SCANNED.get(key)
    if known is not None:
        return known
    hits = _scan(text, since_epoch)
    with _SCANNED_LOCK:
        _SCANNED[key] = hits
        while len(_SCANNED) > _SCANNED_MAX:
            _SCANNED.popitem(last=False)
    return hits


def _scan(text: str, since_epoch: float | None) -> tuple[SignatureHit, ...]:
    accs: dict[str, _Acc] = {}
    samples: dict[str, list[str]] = {}
    ranks: dict[str, set[str]] = {}
    low_text = text.lower()
    active = [sig for sig in SIGNATURES if sig.literal in low_text]
    if not active:
        return ()
    lines = text.split("\n")
    low_lines = low_text.split("\n")  # lower() never adds or drops a newline: same indexes
    current: float | None = None  # the time of the newest timestamped line at or before i
    seen = -1  # lines up to here were looked at for `current`
    for i, low in enumerate(low_lines):
        if not any(sig.literal in low for sig in active):
            continue
        line = lines[i].rstrip("\r")
        # timestamps only where a signature is: walk back to the newest stamped line
        for j in range(i, seen, -1):
            ts = parse_log_timestamp(lines[j].rstrip("\r"))
            if ts is not None:
                current = ts
                break
        seen = i
        if since_epoch is not None and current is not None and current < since_epoch:
            continue
        rank: str | None = None
        rank_read = False
        for sig in active:
            if sig.literal not in low or not sig.pattern.search(line):
                continue
            acc = accs.setdefault(sig.key, _Acc())
            acc.count += 1
            if current is not None:
                acc.first = current if acc.first is None else min(acc.first, current)
                acc.last = current if acc.last is None else max(acc.last, current)
            got = samples.setdefault(sig.key, [])
            if len(got) < _MAX_SAMPLES:
                got.append(line[:_SAMPLE_CHARS])
            if not rank_read:  # one line often matches several signatures
                rank, rank_read = parse_rank(line), True
            if rank is not None:
                ranks.setdefault(sig.key, set()).add(rank)
    return tuple(
        SignatureHit(sig.key, sig.kind, accs[sig.key].count, accs[sig.key].first,
                     accs[sig.key].last, tuple(samples[sig.key]),
                     tuple(sorted(ranks.get(sig.key, ()))))
        for sig in SIGNATURES if sig.key in accs
    )
