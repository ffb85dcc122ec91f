"""Log text (journalctl, SGLang log files, docker compose logs) -> signature hits.

A log is a grep target, not a grammar: every line is read, lines that match no signature
are ignored, so this never raises. Timestamps come from the line's own prefix; a line
without one (a traceback frame) inherits the previous line's. Times are read by
parsers/logtime.py, the one reader (a time without a zone is UTC).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from pdforensics import linear
from pdforensics.parsers.linescan import first_line_with, numbers_with, split_lines
from pdforensics.parsers.log_trends import BatchLine, batch_line
from pdforensics.parsers.logtime import (
    SGLANG_PREFIX,
    NewestStamp,
    parse_log_timestamp,
    sglang_prefix,
    strip_compose_prefix,
)
from pdforensics.parsers.settings import in_setting_name
from pdforensics.parsers.textcache import Memo, by_text, digest

__all__ = ["SIGNATURES", "SignatureHit", "match_log_signatures", "parse_log_timestamp", "parse_rank",
           "scan_log_signatures", "strip_compose_prefix"]

Kind = Literal["cause", "consequence", "noise"]
ANSI_CODE = linear.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Signature:
    """One known log string: stable key, regex, cause / consequence / noise, meaning.

    ``literals`` are lower-case substrings; a line holding none of them cannot match.
    """

    key: str
    pattern: linear.Pattern[str]
    kind: Kind
    description: str
    literals: tuple[str, ...]
    masks_causes: bool = False  # a line with this key is no cause for any other key
    roles: tuple[str, ...] = ()  # the PD roles whose code prints it (sglang's source)
    label_why: str = ""  # where the label comes from (sglang's source, or log_spec)

    @property
    def literal(self) -> str:
        return self.literals[0]


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
    # where the last run of this signature began: hits no more than RUN_GAP_S apart are one
    # run, so a wedge older than the evidence window still has its true start
    run_start: float | None = None


def _signatures_from_table() -> tuple[Signature, ...]:
    """SIGNATURES from the table generated from sglang's source (catalog/data)."""
    from pdforensics.catalog.log_table import load_shipped_table

    out = []
    for row in load_shipped_table()["signatures"]:
        rows = list(row["patterns"]) + list(row["external"])
        if not rows:
            continue
        regexes = sorted({r["regex"] for r in rows})
        literals = tuple(sorted({r["literal"] for r in rows}, key=lambda x: (-len(x), x)))
        roles = tuple(sorted({r for p in row["patterns"] for r in p.get("roles", ())}))
        out.append(Signature(row["key"], linear.compile("|".join(f"(?:{r})" for r in regexes),
                                                    linear.I),
                             row["label"], row["description"], literals,
                             bool(row.get("masks_causes")), roles, row.get("label_why", "")))
    return tuple(out)


#: The signature table, in report order (generated: pdforensics/catalog/data/log_signatures.json).
SIGNATURES: tuple[Signature, ...] = _signatures_from_table()

_MAX_SAMPLES = 5
#: two hits of one signature further apart than this start a new run (two PD timeouts)
RUN_GAP_S = 600.0
_SAMPLE_CHARS = 500

#: (SGLang 0.2-0.3 printed the time of day alone before the ranks: "[23:17:08 TP4]")
_RANK_ONLY_RE = linear.compile(r"\[ ?(?:\d\d:\d\d:\d\d )?((?:(?:DP|TP|PP|EP|CP)\d+ ?)+)\]")
#: a line that opens inside SGLang's prefix, its "[date" cut off by a paste or a wrapped
#: terminal: "17:15:42 DP3 TP3 EP3] Scheduler hit an exception"
_RANK_CUT_RE = linear.compile(r"^(?:\d\d:\d\d:\d\d )?((?:(?:DP|TP|PP|EP|CP)\d+ ?)+)\] ")
#: _RANK_ONLY_RE cannot match without one of these ("[ TP2]": a prefix whose time was left out)
_RANK_KINDS = ("DP", "TP", "PP", "EP", "CP")


def parse_rank(line: str) -> str | None:
    """The SGLang rank of a line (``TP0``, ``DP1_TP3``) from its ``[... TPn]`` prefix."""
    head = line[:300]
    prefix = sglang_prefix(head) if head[:1] == "[" else None
    if prefix is not None and prefix[1]:  # an SGLang prefix opening the line: the leftmost
        return prefix[1]
    if prefix is None:
        m = SGLANG_PREFIX.search(head)
        if m and m.group(8):
            return "_".join(m.group(8).split())
    if not any(kind in head for kind in _RANK_KINDS):
        return None
    m = _RANK_ONLY_RE.search(head) or _RANK_CUT_RE.match(head)
    if m:
        return "_".join(m.group(1).split())
    return None


@dataclass
class _Acc:
    count: int = 0
    first: float | None = None
    last: float | None = None
    run_start: float | None = None

    def add(self, t: float | None) -> None:
        self.count += 1
        if t is None:
            return
        if self.last is None or t - self.last > RUN_GAP_S:
            self.run_start = t
        self.first = t if self.first is None else min(self.first, t)
        self.last = t if self.last is None else max(self.last, t)


# A capture scans each log twice, the same text both times: for parsed/ while it collects and
# for the analysis after. The answer (a few counts and samples) is kept by the text's digest.
_SCANNED = Memo(keep=256)


def scan_log_signatures(text: str, since_epoch: float | None = None,
                        until_epoch: float | None = None) -> tuple[SignatureHit, ...]:
    """Count SIGNATURES in ``text``; with ``since_epoch`` skip lines known to be older, with
    ``until_epoch`` lines known to be that old or newer (the history before a window).

    Lines whose time is unknown (no timestamp seen yet) are counted, except in the history. Hits come back in
    SIGNATURES order, one per cause or consequence signature that matched, then the queue
    signatures (a disaggregation queue count rising across batch lines). Noise is left out:
    `match_log_signatures` gives it too.
    """
    return tuple(h for h in match_log_signatures(text, since_epoch, until_epoch)
                 if h.kind != "noise")


def match_log_signatures(text: str, since_epoch: float | None = None,
                         until_epoch: float | None = None) -> tuple[SignatureHit, ...]:
    """scan_log_signatures with noise signatures (the periodic batch lines) kept. (smg colours
    its log even into a file or journald: the lines are read without their colour codes.)"""
    key = (digest(text), since_epoch, until_epoch)
    known: tuple[SignatureHit, ...] | None = _SCANNED.get(key)
    if known is None:
        known = _scan(text, since_epoch, until_epoch)
        _SCANNED.put(key, known)
    return known


#: what only an SGLang server prints (lower case): its endpoints, its process titles, its
#: source paths
SGLANG_MARKS = ("/health_generate", "/generate http", "/v1/loads", "/get_model_info",
                "/model_info", "sglang::", "sglang/srt/", "server_args=serverargs",
                "/flush_cache", "/get_server_info", "/server_info",
                "serving benchmark result")  # sglang.bench_serving's summary


def written_by_sglang(text: str) -> bool:
    """The text holds a line only an SGLang server writes: a batch line or an SGLANG_MARK."""
    return bool(match_log_signatures(text)) or first_line_with(text, SGLANG_MARKS,
                                                               ignore_case=True) is not None


def _masked(got: list[Signature], masks: bool | None = None) -> list[Signature]:
    """``got`` without its causes when one of them masks causes (``masks``: whether one does,
    when the caller knows)."""
    if masks if masks is not None else any(sig.masks_causes for sig in got):
        return [sig for sig in got if sig.kind != "cause"]
    return got


@dataclass(frozen=True)
class SignatureLine:
    """One log line that matched signatures: its 1-based number, text, time and matches."""

    no: int
    line: str
    time: float | None
    matched: tuple[Signature, ...]
    masked: tuple[Signature, ...] = ()  # causes the line names that a consequence masks
    rank: str | None = None  # parse_rank of the line, read once for every reader
    batch: BatchLine | None = None  # a BATCH_STATS line, its queue counts read


#: every signature's pattern in one set: one search per line says which of them it holds
_SIGNATURE_SET = linear.PatternSet([sig.pattern for sig in SIGNATURES])
_LITERALS = tuple(sorted({lit for sig in SIGNATURES for lit in sig.literals}))


#: (signature, its literals, is it noise) by index in SIGNATURES: what the loop below asks
_BY_INDEX = tuple((sig, sig.literals, sig.kind == "noise") for sig in SIGNATURES)
_BATCH_STATS = next(i for i, sig in enumerate(SIGNATURES) if sig.key == "BATCH_STATS")


def _candidates(text: str) -> list[int]:
    """Indexes of the lines whose lower case holds a signature literal (no other line can
    match), found by one scan of the whole text."""
    return [no - 1 for no in numbers_with(text, _LITERALS, ignore_case=True)]


def iter_signature_lines(text: str, since_epoch: float | None = None,
                         with_noise: bool = True, until_epoch: float | None = None
                         ) -> Iterator[SignatureLine]:
    """Every line of ``text`` that matches a signature, in order, with the time of the newest
    stamped line at or before it (a traceback frame inherits its header's time); with
    ``until_epoch`` only lines known to be older than it."""
    if "\x1b[" in text:
        text = ANSI_CODE.sub("", text)
    lines = split_lines(text)
    times = NewestStamp(lines, parse_log_timestamp)
    for i in _candidates(text):
        line = lines[i].rstrip("\r")
        found = _SIGNATURE_SET.matching(line)
        if not found:
            continue
        low = line.lower()
        # a signature counts where its pattern and one of its literals are on the line
        every = []
        batch_stats = masks = False
        for k in found:
            sig, lits, noise = _BY_INDEX[k]
            if with_noise or not noise:
                for lit in lits:
                    if lit in low:
                        if k != _BATCH_STATS and in_setting_name(low, lit):
                            break  # a setting's name ("Watchdog timeout (--timeout=N) : 600")
                        every.append(sig)
                        batch_stats = batch_stats or k == _BATCH_STATS
                        masks = masks or sig.masks_causes
                        break
        if not every:
            continue
        current = times.at(i)  # times only where a signature is
        if since_epoch is not None and current is not None and current < since_epoch:
            continue
        if until_epoch is not None and (current is None or current >= until_epoch):
            continue
        matched = _masked(every, masks)
        rank = parse_rank(line)
        # BATCH_STATS is noise: never masked, in `matched` whenever in `every`
        batch = batch_line(current, rank, line) if batch_stats else None
        yield SignatureLine(i + 1, line, current, tuple(matched),
                            tuple(s for s in every if s not in matched) if matched is not every
                            else (), rank, batch)


@by_text
def signature_lines(text: str) -> tuple[SignatureLine, ...]:
    """Every line of ``text`` that matches a signature (noise included), remembered by the
    text: the scan for hits and the diagnosis read the same lines."""
    return tuple(iter_signature_lines(text))


def _scan(text: str, since_epoch: float | None, until_epoch: float | None
          ) -> tuple[SignatureHit, ...]:
    found = signature_lines(text)  # read once; each window is a choice among its lines
    if since_epoch is not None:
        found = tuple(h for h in found if h.time is None or h.time >= since_epoch)
    if until_epoch is not None:
        found = tuple(h for h in found if h.time is not None and h.time < until_epoch)
    return _hits(found)


def merge_hits(hits: Iterable[SignatureHit]) -> tuple[SignatureHit, ...]:
    """Hits of several texts (the writers of one log, the logs of one service) as one per
    signature: counts added, the earliest first and latest last time, the first samples."""
    by: dict[str, SignatureHit] = {}
    for h in hits:
        o = by.get(h.key)
        if o is None:
            by[h.key] = h
            continue
        firsts = [x for x in (o.first_epoch, h.first_epoch) if x is not None]
        lasts = [x for x in (o.last_epoch, h.last_epoch) if x is not None]
        by[h.key] = SignatureHit(h.key, h.kind, o.count + h.count, min(firsts, default=None),
                                 max(lasts, default=None), (o.samples + h.samples)[:5],
                                 tuple(sorted(set(o.ranks + h.ranks))))
    return tuple(by.values())


def split_log_signatures(text: str, at: float) -> tuple[tuple[SignatureHit, ...],
                                                         tuple[SignatureHit, ...]]:
    """(hits of lines at or after ``at`` or of unknown time, hits of older lines), noise left
    out (the evidence window's split of a log)."""
    inside: list[SignatureLine] = []
    before: list[SignatureLine] = []
    for hit in signature_lines(text):
        (before if hit.time is not None and hit.time < at else inside).append(hit)
    return (tuple(h for h in _hits(inside) if h.kind != "noise"),
            tuple(h for h in _hits(before) if h.kind != "noise"))


def _hits(found: Iterable[SignatureLine]) -> tuple[SignatureHit, ...]:
    from pdforensics.parsers.log_trends import rising_queues

    accs: dict[str, _Acc] = {}
    samples: dict[str, list[str]] = {}
    ranks: dict[str, set[str]] = {}
    batch_lines: list[BatchLine] = []
    for hit in found:
        line, current = hit.line, hit.time
        rank = hit.rank
        for sig in hit.matched:
            accs.setdefault(sig.key, _Acc()).add(current)
            got = samples.setdefault(sig.key, [])
            if len(got) < _MAX_SAMPLES:
                got.append(line[:_SAMPLE_CHARS])
            if rank is not None:
                ranks.setdefault(sig.key, set()).add(rank)
            if sig.key == "BATCH_STATS":
                batch_lines.append(hit.batch or batch_line(current, rank, line))
    hits = [SignatureHit(sig.key, sig.kind, accs[sig.key].count, accs[sig.key].first,
                         accs[sig.key].last, tuple(samples[sig.key]),
                         tuple(sorted(ranks.get(sig.key, ()))), accs[sig.key].run_start)
            for sig in SIGNATURES if sig.key in accs]
    hits.extend(SignatureHit(r.key, "cause", r.count, r.first_epoch, r.last_epoch, r.samples,
                             r.ranks, r.first_epoch) for r in rising_queues(batch_lines))
    return tuple(hits)
