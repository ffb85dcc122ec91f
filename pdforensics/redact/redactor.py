"""Secret scrubbing applied to everything before it is written.

Values become `<redacted:` + 10 hex of HMAC-SHA256(key, value) + `>`: the same value always
gives the same marker under one key, so diffs can still tell "changed" from "same". The key
lives in the user's config dir (or PDFORENSICS_REDACT_KEY) and never enters a bundle.

The detectors (detectors.find_secrets) are shared with `verify --secrets` (secrets_scan.py): what the
redactor would change, the scanner reports.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import platformdirs

from pdforensics import linear
from pdforensics.model import Redaction
from pdforensics.redact.allow import DEFAULT, Allowlist, never_kept
from pdforensics.redact.detectors import (
    EMPTY_VALUES,
    KINDS,
    MARKER,
    Hit,
    find_secrets,
    is_clear,
    is_plain_number,
    is_secret_name,
)
from pdforensics.redact.entropy import looks_random

__all__ = ["EMPTY_VALUES", "KINDS", "MARKER", "Allowlist", "Hit", "NoRedactor", "Redactor",
           "find_secrets", "is_secret_name", "load_key"]

# collectors.logs.LOG_BYTES: a log_file result this long is a tail that began mid-line
LOG_TAIL_BYTES = 8 << 20
# Learned values shorter than this are not hunted everywhere (they would hit ordinary text).
MIN_LEARNED = 6
MAX_LEARNED = 4096  # values hunted everywhere (one RE2 alternation)
MIN_LEARNED_HIT = 8  # values a detector found: one more token hunted everywhere
_is_clear = is_clear


def _harmless_number(name: str, value: bytes) -> bool:
    """A short number under a name that does not look like a credential (`--chunked-prefil-size
    4096`, a typo no catalog knows): kept readable, since the diff that finds such a change is
    the point of the capture and such a value hides no secret."""
    return is_plain_number(value) and not never_kept(name) and not is_secret_name(name)


def _worth_learning(value: bytes) -> bool:
    """A redacted value hunted in every other output of the capture: long enough not to hit
    ordinary text, one token (no spaces), not a number."""
    return (len(value) >= MIN_LEARNED_HIT and not any(c in value for c in b" \t\r\n\x00")
            and not is_plain_number(value) and MARKER.search(value) is None)


def _replace_spans(data: bytes, hits: list[Hit], marker: Callable[[bytes], bytes]) -> bytes:
    """data with each (merged) hit span replaced by its marker."""
    if not hits:
        return data
    spans: list[list[int]] = []
    for h in sorted(hits, key=lambda h: h.start):
        if spans and h.start < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], h.end)
        else:
            spans.append([h.start, h.end])
    out, pos = [], 0
    for s, e in spans:
        out += [data[pos:s], marker(data[s:e])]
        pos = e
    out.append(data[pos:])
    return b"".join(out)


_TOKEN_RUN = linear.compile(rb"[A-Za-z0-9_\-.+/~=]{6,512}")


# -- the key ----------------------------------------------------------------------------------
def load_key() -> bytes:
    """The per-user redaction key, created on first use (0600)."""
    env = os.environ.get("PDFORENSICS_REDACT_KEY")
    if env:
        return env.encode()
    path = Path(platformdirs.user_config_dir("pdforensics")) / "redact.key"
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_hex(32).encode()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        return key
    except OSError:
        return secrets.token_hex(32).encode()  # unwritable home: still redact, per run


# -- the redactor -----------------------------------------------------------------------------
MEMO_MAX_BYTES = 1024  # longer texts (logs, dumps, command lines) are not remembered
MEMO_MAX_ENTRIES = 20_000  # at most ~40 MB


class Redactor:
    """Scrubs known secret values and credential-looking text; thread-safe.

    Env vars and the flags of a process's cmdline are kept by allowlist (redact_allow):
    every value not on it becomes a marker. Free text goes through the detectors."""

    enabled = True

    def __init__(self, key: bytes | None = None, allow: Allowlist = DEFAULT):
        self.key = key if key is not None else load_key()
        self.allow = allow
        self._values: set[bytes] = set()
        self._lock = threading.Lock()
        # text() of short strings, for the learned values of the moment: a capture's parsed
        # JSON repeats the same few thousand strings (stack frames, paths) tens of thousands of times
        self._learned: linear.Pattern[bytes] | None = None  # every learned value, longest first
        self._memo: dict[bytes, bytes] = {}
        self._markers: dict[bytes, bytes] = {}
        # what was redacted, by (source, kind): counts only, never a value (verify --explain)
        self._tally: Counter[tuple[str, str]] = Counter()
        # keyed digests of values learned by earlier captures of a store (never the values):
        # a token of one of these lengths whose marker is known is replaced too
        self._digests: dict[int, frozenset[bytes]] = {}
        self._where = threading.local()

    def marker(self, value: bytes) -> bytes:
        done = self._markers.get(value)
        if done is not None:
            return done
        digest = hmac.new(self.key, value, hashlib.sha256).hexdigest()[:10]
        marker = b"<redacted:" + digest.encode() + b">"
        if len(self._markers) < MEMO_MAX_ENTRIES:
            self._markers[value] = marker
        return marker

    def describe(self) -> dict[str, Any]:
        """What the manifest records: on, which key (so markers compare across bundles), and
        the allowlist (with the operator's --keep-env names)."""
        key_id = hashlib.sha256(b"pdforensics-key-id\0" + self.key).hexdigest()[:12]
        return {"enabled": True, "key_id": key_id, **self.allow.describe(), "redacted": self.tally()}

    def learn(self, values: Iterable[bytes]) -> None:
        """Remember secret values (from environ) so they are scrubbed from every output."""
        with self._lock:
            before = len(self._values)
            self._values.update(v for v in values if len(v) >= MIN_LEARNED and not _is_clear(v)
                                and len(self._values) < MAX_LEARNED)
            if len(self._values) != before:
                longest_first = sorted(self._values, key=len, reverse=True)
                self._learned = linear.compile(b"|".join(linear.escape(v) for v in longest_first), remember=False)
                self._memo = {}  # what was scrubbed without the new values is scrubbed again

    def environ(self, data: bytes) -> bytes:
        """Redact a NUL-separated environ block: every value whose name is not on the allowlist
        becomes a marker; secret-named or random-looking values are hunted in other output."""
        out = []
        learned = []
        for entry in data.split(b"\0"):
            name, sep, value = entry.partition(b"=")
            text_name = name.decode("utf-8", "replace")
            if sep and value and not _is_clear(value) and not self.allow.keeps_env(text_name) \
                    and not _harmless_number(text_name, value):
                if is_secret_name(text_name) or (looks_random(value) and b"://" not in value
                                                 and not any(c in value for c in b" \t\n")):
                    learned.append(value)
                entry = name + b"=" + self.marker(value)
                self._count("env-not-allowlisted")
            out.append(entry)
        self.learn(learned)
        return self.text(b"\0".join(out))

    def cmdline(self, data: bytes) -> bytes:
        """Redact a NUL-separated argv (/proc/PID/cmdline): the value of every flag that is not
        on the allowlist becomes a marker; positional words are left to the detectors. Values
        of credential flags (`--api-key V`) and random-looking ones are learned, so the same
        value in a log of the capture is scrubbed too."""
        args = data.split(b"\0")
        learned: list[bytes] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg[:1] == b"-" and len(arg) > 1 and not arg[1:2].isdigit():
                flag, sep, value = arg.partition(b"=")
                name = flag.decode("utf-8", "replace")
                keep = self.allow.keeps_flag(name)
                at = i
                if not sep:
                    if not (i + 1 < len(args) and args[i + 1][:1] != b"-" and args[i + 1]):
                        i += 1
                        continue
                    i += 1
                    at, value = i, args[i]
                if not keep and not _is_clear(value) and not _harmless_number(name, value):
                    if is_secret_name(name) or looks_random(value):
                        learned.append(value)
                    args[at] = flag + b"=" + self.marker(value) if sep else self.marker(value)
                    self._count("flag-not-allowlisted")
            i += 1
        self.learn(learned)
        return self.text(b"\0".join(args))

    def output(self, source: str, data: bytes, redaction: Redaction = "text") -> bytes:
        """A command's stdout, as its source declares (model.Redaction): environ and argv by
        allowlist, a log tail from its first whole line, a pickle as its redacted JSON form,
        anything else through the detectors."""
        self._where.source = source
        try:
            if redaction == "environ":
                return self.environ(data)
            if redaction == "argv":
                return self.cmdline(data)
            if redaction == "log_tail":
                return self.log_window(data, cut=len(data) >= LOG_TAIL_BYTES)
            if redaction == "pickle":
                return self.pickled(data)
            return self.text(data)
        finally:
            self._where.source = None

    def pickled(self, data: bytes) -> bytes:
        """A Flight Recorder dump: a plain pickle becomes its redacted JSON form (never
        unpickled with code); anything else is scrubbed as bytes (redact/pickled.py)."""
        from pdforensics.redact.pickled import redact_pickled

        return redact_pickled(data, self.string, self.text)

    def log_window(self, data: bytes, cut: bool) -> bytes:
        """A log tail: when it was cut (`cut`), it starts at the next line boundary, so a secret
        whose name or `Bearer ` fell before the cut is not left half-seen; then text()."""
        if cut:
            nl = data.find(b"\n")
            data = data[nl + 1:] if nl >= 0 else b""
        return self.text(data)

    def text(self, data: bytes) -> bytes:
        """Scrub any output: learned values first, then every detector in turn."""
        with self._lock:
            values, memo = self._learned, self._memo
        remember = len(data) <= MEMO_MAX_BYTES
        if remember and (done := memo.get(data)) is not None:
            return done
        clean = self._text(data, values)
        if remember and len(memo) < MEMO_MAX_ENTRIES:
            memo[data] = clean
        return clean

    def _text(self, data: bytes, values: linear.Pattern[bytes] | None) -> bytes:
        if values is not None:  # one linear pass for every learned value
            data, n = values.subn(lambda m: self.marker(m.group()), data)
            if n:
                self._count("learned-value", n)
        if self._digests:
            data = self._known_digests(data)
        hits = list(find_secrets(data))
        if hits:
            for h in hits:
                self._count(h.kind)
            self.learn(v for v in (data[h.start:h.end] for h in hits) if _worth_learning(v))
            data = _replace_spans(data, hits, self.marker)
        return data

    def remember(self, markers: Iterable[tuple[int, str]]) -> None:
        """(length, marker) of values an earlier capture learned (LearnedStore): a token of that
        length whose marker matches is replaced in this capture too, without the value on disk."""
        by_len: dict[int, set[bytes]] = {}
        for length, marker in markers:
            if MIN_LEARNED <= length <= 512 and MARKER.fullmatch(marker.encode()):
                by_len.setdefault(length, set()).add(marker.encode())
        with self._lock:
            self._digests = {n: frozenset(ms) for n, ms in by_len.items()}
            self._memo = {}

    def learned_markers(self) -> list[tuple[int, str]]:
        """(length, marker) of every value learned so far: what a store keeps for later captures."""
        with self._lock:
            values = list(self._values)
        return sorted({(len(v), self.marker(v).decode()) for v in values if len(v) <= 512})

    def _known_digests(self, data: bytes) -> bytes:
        def swap(m: linear.Match[bytes]) -> bytes:
            token = m.group()
            for part in (token, *token.split(b"=", 1)):
                known = self._digests.get(len(part))
                if known and self.marker(part) in known:
                    self._count("learned-value (earlier capture)")
                    return token.replace(part, self.marker(part))
            return token

        return _TOKEN_RUN.sub(swap, data)

    def _count(self, kind: str, n: int = 1) -> None:
        source = getattr(self._where, "source", None) or "manifest and derived text"
        with self._lock:
            self._tally[(source, kind)] += n

    def tally(self) -> list[dict[str, Any]]:
        """What was redacted, by source and kind, with counts (never values), for the manifest."""
        with self._lock:
            items = sorted(self._tally.items())
            learned = len(self._values)
        return [{"source": s, "kind": k, "count": n} for (s, k), n in items] + (
            [{"source": "(capture)", "kind": "values learned and hunted everywhere", "count": learned}]
            if learned else [])

    def string(self, text: str) -> str:
        return self.text(text.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")

    def json(self, obj: Any) -> Any:
        """The same structure with every string leaf (not keys) scrubbed."""
        if isinstance(obj, str):
            return self.string(obj)
        if isinstance(obj, dict):
            return {k: self.json(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.json(v) for v in obj)
        return obj

    def argv(self, argv: Iterable[str]) -> tuple[str, ...]:
        """An argv scrubbed as one NUL-joined string, so `--api-key`, `V` pairs are seen."""
        joined = "\0".join(argv)
        return tuple(self.string(joined).split("\0")) if joined else ()

    def known_values(self) -> frozenset[bytes]:
        with self._lock:
            return frozenset(self._values)


NO_REDACT_WARNING = ("pdforensics: WARNING: --no-redact: secrets (tokens, keys, passwords) are written "
                     "to the bundle as collected; do not attach it to a ticket")


class NoRedactor(Redactor):
    """`--no-redact`: writes everything as collected. The manifest says so."""

    enabled = False

    def __init__(self) -> None:
        super().__init__(key=b"")

    def describe(self) -> dict[str, Any]:
        return {"enabled": False, "warning": NO_REDACT_WARNING}

    def learn(self, values: Iterable[bytes]) -> None:
        return None

    def environ(self, data: bytes) -> bytes:
        return data

    def cmdline(self, data: bytes) -> bytes:
        return data

    def pickled(self, data: bytes) -> bytes:
        return data

    def log_window(self, data: bytes, cut: bool) -> bytes:
        return data

    def text(self, data: bytes) -> bytes:
        return data
