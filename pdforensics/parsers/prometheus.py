"""Prometheus text exposition (and OpenMetrics-ish) -> MetricsSnapshot.

Line-oriented and lenient: a line that cannot be read is recorded in
``MetricsSnapshot.bad_lines`` and the rest of the scrape is kept (one garbage line in
/metrics must not lose the other 50k samples). Never raises on arbitrary text.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from pdforensics import linear
from pdforensics.catalog.aliases import METRIC_ALIASES as _CATALOG_ALIASES  # noqa: E402
from pdforensics.catalog.aliases import canonical_metric  # noqa: E402

Labels = tuple[tuple[str, str], ...]

# The one alias table (old -> new names) lives with the catalog; re-exported here.
METRIC_ALIASES = _CATALOG_ALIASES

_SUFFIXES: dict[str, tuple[str, ...]] = {
    "histogram": ("_bucket", "_count", "_sum", "_created", "_gcount", "_gsum"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "summary": ("_count", "_sum", "_created"),
    "counter": ("_total", "_created"),
    "info": ("_info",),
}

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_NAME_RE = linear.compile(_NAME)
_SAMPLE_RE = linear.compile(rf"({_NAME})[ \t]*(?:\{{(.*)\}})?[ \t]*([^ \t]+)(?:[ \t]+([^ \t]+))?[ \t]*")
_PAIR = r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*'
_PAIR_NC = r'[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\\n]|\\.)*"[ \t]*'
_LABEL_RE = linear.compile(_PAIR)
_KEY_RE = linear.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_LABELS_FULL_RE = linear.compile(rf"[ \t]*|(?:{_PAIR_NC},)*{_PAIR_NC},?[ \t]*")
_EXEMPLAR_RE = linear.compile(r"[ \t]+#[ \t]+\{[^}]*\}.*$")
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_ESC_RE = linear.compile(r"\\[\\\"n]")
_VALUE_WORDS = {"nan": math.nan, "+inf": math.inf, "inf": math.inf, "-inf": -math.inf}
_NUMBER_RE = linear.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F]+")


def canonical_name(name: str) -> str:
    """``sglang_X`` (router re-export) -> ``sglang:X``; old names -> new (METRIC_ALIASES)."""
    return canonical_metric(name)


@dataclass(frozen=True)
class Sample:
    """One sample line: name as exposed, sorted labels, value, optional timestamp.

    ``timestamp`` is the number as written (milliseconds in Prometheus text, seconds in
    OpenMetrics). ``family`` is the family name (``x`` for ``x_bucket`` of histogram ``x``).
    """

    name: str
    labels: Labels
    value: float
    timestamp: float | None = None
    family: str = ""

    def label(self, key: str) -> str | None:
        """The value of label ``key`` or None."""
        for k, v in self.labels:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class MetricFamily:
    """``# TYPE`` / ``# HELP`` metadata of one family (type "untyped" when not declared)."""

    name: str
    type: str = "untyped"
    help: str | None = None
    unit: str | None = None


@dataclass(frozen=True)
class BadLine:
    """A line the parser skipped, with its 1-based number and the reason."""

    lineno: int
    line: str
    reason: str


@dataclass(frozen=True)
class MetricsSnapshot:
    """All samples of one scrape plus metadata; lookups go through canonical names."""

    samples: tuple[Sample, ...] = ()
    families: tuple[MetricFamily, ...] = ()
    bad_lines: tuple[BadLine, ...] = ()
    eof: bool = False
    _index: dict[str, tuple[Sample, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        index: dict[str, list[Sample]] = {}
        names: dict[str, list[Sample]] = {}
        for s in self.samples:
            bucket = names.get(s.name)
            if bucket is None:
                bucket = names[s.name] = index.setdefault(canonical_name(s.name), [])
            bucket.append(s)
        object.__setattr__(self, "_index", {k: tuple(v) for k, v in index.items()})

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    def get(self, name: str, **labels: str) -> tuple[Sample, ...]:
        """Samples named ``name`` (any spelling: ``sglang_X``, old alias) matching ``labels``."""
        found = self._index.get(canonical_name(name), ())
        if not labels:
            return found
        want = labels.items()
        return tuple(s for s in found if all(s.label(k) == v for k, v in want))

    def value_sum(self, name: str, **labels: str) -> float | None:
        """Sum of the matching samples' values, or None when there is none."""
        found = self.get(name, **labels)
        if not found:
            return None
        try:
            return math.fsum(s.value for s in found)
        except (ValueError, OverflowError):  # inf + -inf, or overflow
            return sum(s.value for s in found)

    def family(self, name: str) -> MetricFamily | None:
        """Metadata of family ``name`` (canonical comparison), or None."""
        want = canonical_name(name)
        for fam in self.families:
            if canonical_name(fam.name) == want:
                return fam
        return None

    def names(self) -> tuple[str, ...]:
        """Canonical names of every sample present, sorted."""
        return tuple(sorted(self._index))


def _parse_value(text: str) -> float | None:
    if text[-1].isdigit() and text.isascii() and "_" not in text:
        try:
            return float(text)
        except ValueError:
            pass
    word = _VALUE_WORDS.get(text.lower())
    if word is not None:
        return word
    if not _NUMBER_RE.fullmatch(text):
        return None
    try:
        return float(text) if not text.lower().lstrip("+-").startswith("0x") else float(
            int(text, 16)
        )
    except (ValueError, OverflowError):
        return None


def _parse_labels(body: str, memo: dict[str, tuple[str, str]] | None = None) -> Labels | None:
    """Parse ``k="v",k2="v2"`` (trailing comma allowed); None when malformed."""
    if "\\" not in body:
        fast = _parse_labels_plain(body, {} if memo is None else memo)
        if fast is not None:
            return fast
    if not _LABELS_FULL_RE.fullmatch(body):
        return None
    pairs = _LABEL_RE.findall(body)
    if "\\" in body:
        pairs = [(k, _ESC_RE.sub(_unescape, v)) for k, v in pairs]
    pairs.sort()
    return tuple(pairs)


def _parse_labels_plain(body: str, memo: dict[str, tuple[str, str]]) -> Labels | None:
    """Fast path for bodies without escapes: split on the closing quote + comma.

    ``memo`` maps an already validated ``k="v`` piece to its pair (pieces repeat a lot).
    """
    text = body.rstrip(" \t")
    if text.endswith(","):
        text = text[:-1]
    if not text.endswith('"'):
        return None
    pairs = []
    for piece in text[:-1].split('",'):
        pair = memo.get(piece)
        if pair is None:
            key, sep, value = piece.partition('="')
            if not sep or '"' in value or "\n" in value or not _KEY_RE.fullmatch(key):
                return None
            pair = memo[piece] = (key, value)
        pairs.append(pair)
    pairs.sort()
    return tuple(pairs)


def _unescape(m: linear.Match[str]) -> str:
    return _ESCAPES[m.group(0)]


def _family_of(name: str, types: dict[str, tuple[str, str]]) -> str:
    """The declared family of sample ``name``; ``types`` maps canonical -> (name, type)."""
    hit = types.get(canonical_name(name))
    if hit is not None:
        return hit[0]
    for suffix_type, suffixes in _SUFFIXES.items():
        for suf in suffixes:
            if name.endswith(suf):
                base = types.get(canonical_name(name[: -len(suf)]))
                if base is not None and base[1] == suffix_type:
                    return base[0]
    return name


def _parse_comment(
    line: str, lineno: int, types: dict[str, tuple[str, str]], meta: dict[str, dict[str, str]]
) -> BadLine | None:
    parts = line[1:].strip().split(None, 2)
    if not parts or parts[0] not in ("TYPE", "HELP", "UNIT"):
        return None  # a plain comment
    if len(parts) < 2 or not _NAME_RE.fullmatch(parts[1]):
        return BadLine(lineno, line, f"malformed # {parts[0]}")
    name = parts[1]
    rest = parts[2] if len(parts) > 2 else ""
    if parts[0] == "TYPE":
        kind = rest.strip().lower()
        if kind not in ("counter", "gauge", "histogram", "summary", "untyped", "unknown",
                        "gaugehistogram", "info", "stateset"):
            return BadLine(lineno, line, "unknown metric type")
        types[canonical_name(name)] = (name, kind)
        meta.setdefault(name, {})["type"] = kind
    elif parts[0] == "HELP":
        text = rest.replace("\\\\", "\0").replace("\\n", "\n").replace("\0", "\\")
        meta.setdefault(name, {})["help"] = text
    else:
        meta.setdefault(name, {})["unit"] = rest.strip()
    return None


def _parse_sample_line(
    line: str, memo: dict[str, tuple[str, str]]
) -> tuple[str, Labels, float, float | None] | str:
    """A parsed sample line, or the reason it is bad."""
    m = _SAMPLE_RE.fullmatch(line)
    if m is None:
        return "not a sample line"
    name, body, value_text, ts_text = m.groups()
    labels: Labels = ()
    if body is not None:
        parsed = _parse_labels(body, memo)
        if parsed is None:
            return "malformed labels"
        labels = parsed
    value = _parse_value(value_text)
    if value is None:
        return "bad value"
    ts: float | None = None
    if ts_text is not None:
        ts = _parse_value(ts_text)
        if ts is None or not math.isfinite(ts):
            return "bad timestamp"
    return name, labels, value, ts


def parse_metrics(text: str) -> MetricsSnapshot:
    """Parse a /metrics scrape. Bad lines go to ``bad_lines``; empty text -> empty snapshot."""
    samples: list[Sample] = []
    bad: list[BadLine] = []
    types: dict[str, tuple[str, str]] = {}
    meta: dict[str, dict[str, str]] = {}
    eof = False
    family_cache: dict[str, str] = {}
    memo: dict[str, tuple[str, str]] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        raw = raw.rstrip("\r")
        line = raw.strip()
        if not line:
            continue
        if eof:
            bad.append(BadLine(lineno, raw, "text after # EOF"))
            continue
        if line[0] == "#":
            if line == "# EOF":
                eof = True
                continue
            problem = _parse_comment(line, lineno, types, meta)
            if problem is not None:
                bad.append(problem)
            continue
        sample = _parse_sample_line(line, memo)
        if isinstance(sample, str) and "#" in line:
            cut = _EXEMPLAR_RE.sub("", line)
            if cut != line:
                retry = _parse_sample_line(cut, memo)
                sample = retry if not isinstance(retry, str) else sample
        if isinstance(sample, str):
            bad.append(BadLine(lineno, raw, sample))
            continue
        name, labels, value, ts = sample
        fam = family_cache.get(name)
        if fam is None:
            fam = family_cache[name] = _family_of(name, types)
        samples.append(Sample(name, labels, value, ts, fam))
    families = tuple(
        MetricFamily(n, m.get("type", "untyped"), m.get("help"), m.get("unit"))
        for n, m in meta.items()
    )
    return MetricsSnapshot(tuple(samples), families, tuple(bad), eof)
