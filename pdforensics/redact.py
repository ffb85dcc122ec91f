"""Secret scrubbing applied to everything before it is written.

Values become `<redacted:` + 10 hex of HMAC-SHA256(key, value) + `>`: the same value always
gives the same marker under one key, so diffs can still tell "changed" from "same". The key
lives in the user's config dir (or PDFORENSICS_REDACT_KEY) and never enters a bundle.

The detectors (DETECTORS) are shared with `verify --secrets` (secrets_scan.py): what the
redactor would change, the scanner reports.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import platformdirs

MARKER = re.compile(rb"<redacted:[0-9a-f]{10}>")
_M = rb"<redacted:[0-9a-f]{10}>"
# Learned values shorter than this are not hunted everywhere (they would hit ordinary text).
MIN_LEARNED = 6
# Values that say "no secret set": kept, so the evidence shows a key is absent.
EMPTY_VALUES = frozenset({b"", b"none", b"null", b"nil", b"true", b"false", b"0", b"1", b"''", b'""'})

# -- names: env vars, flags, JSON keys, key=value ----------------------------------------------
_STRONG = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY",
           "COOKIE", "CONNECTIONSTRING", "PASSPHRASE")
_SEGMENTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# kept for callers that matched names with it; is_secret_name is the rule
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSW(?:OR)?D|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE",
                         re.IGNORECASE)


def _secret_segment(seg: str, last: bool, alone: bool) -> bool:
    if seg.endswith(("TOKEN", "KEY")):  # HF_TOKEN, HFTOKEN, API_KEY, apiKey, TOKEN
        # a word that names the value itself: not HF_TOKEN_PATH, KEY_ID, or a bare `key`
        return last and not (alone and seg == "KEY")
    if seg in ("PASS", "PWD", "DSN", "PRIVATE", "AUTH", "OAUTH", "AUTHN", "AUTHZ"):
        return True
    return "SESSION" in seg or seg.startswith(("AUTHORIZ", "AUTHENTICAT"))


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether an env var, flag, JSON key or `k=v` name holds a credential.

    TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE (as
    words of the name: `HF_TOKEN`, `apiKey`, `--admin-api-key`; TOKEN/KEY as its last word).
    Counts, paths and tools that only contain the letters (`--max-total-tokens`,
    `--tokenizer-path`, `HF_TOKEN_PATH`, `key_id`, a bare `key`, `PWD`) are not secrets.
    """
    bare = name.lstrip("-")
    if bare in ("PWD", "OLDPWD"):
        return False
    segs = [s.upper() for s in _SEGMENTS.findall(bare)]
    joined = "".join(segs)
    return any(w in joined for w in _STRONG) or any(
        _secret_segment(s, i == len(segs) - 1, len(segs) == 1) for i, s in enumerate(segs))


# -- detectors --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Detector:
    """One way a secret shows up: `group` of `pattern` is the secret; `name_group`, when set,
    must be a secret-looking name (is_secret_name) for the match to count. Patterns that
    follow a name put the value in a lookahead, so `Environment=HF_TOKEN=V` is seen twice.
    `needles`: one of them must occur (lower-cased text when `fold`) or the regex is skipped."""

    kind: str
    pattern: re.Pattern[bytes]
    group: int = 0
    name_group: int = 0
    needles: tuple[bytes, ...] = ()
    fold: bool = False

    def may_match(self, data: bytes, lowered: bytes) -> bool:
        hay = lowered if self.fold else data
        return not self.needles or any(n in hay for n in self.needles)


def _shape(kind: str, body: bytes, *needles: bytes) -> Detector:
    return Detector(kind, re.compile(rb"(?<![A-Za-z0-9])" + body), needles=needles)


# words every secret-looking name contains (lower case), for the name-driven detectors
_NAME_WORDS = (b"token", b"key", b"secret", b"pass", b"pwd", b"credential", b"auth", b"cookie",
               b"session", b"private", b"dsn", b"connection")
_BARE = rb"[^\s\x00\"'&,;)}\]]+"
_QUOTED = rb"'[^'\r\n\x00]*'|\"(?:[^\"\\\r\n\x00]|\\.)*\""
_ESCAPED = rb"[^\"\\\x00]*(?:\\.[^\"\\\x00]*)*"
DETECTORS: tuple[Detector, ...] = (
    Detector("pem-private-key", re.compile(
        rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        rb"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\?]*)", re.DOTALL),
        needles=(b"PRIVATE KEY",)),
    _shape("huggingface-token", rb"hf_[A-Za-z0-9]{16,}", b"hf_"),
    _shape("openai-key", rb"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{16,}", b"sk-"),
    _shape("github-token", rb"gh[pousr]_[A-Za-z0-9]{20,}", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
    _shape("github-pat", rb"github_pat_[A-Za-z0-9_]{20,}", b"github_pat_"),
    _shape("slack-token", rb"xox[abposre]-[A-Za-z0-9\-]{10,}", b"xox"),
    _shape("aws-access-key-id", rb"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])", b"AKIA", b"ASIA"),
    _shape("jwt", rb"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", b"eyJ"),
    Detector("aws-secret-access-key", re.compile(
        rb"(?:aws[_\-]?secret[_\-]?(?:access[_\-]?)?key|secret[_\-]?access[_\-]?key)[\"']?\s*[:=]\s*[\"']?"
        rb"(?=(" + _M + rb"|[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])))", re.IGNORECASE), group=1,
        needles=(b"secret",), fold=True),
    Detector("url-password", re.compile(
        rb"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\"'<>\x00]*:(?=(" + _M +
        rb"|[^\s@/\"'<>\x00]+)@)"), group=1, needles=(b"://",)),
    Detector("http-header", re.compile(
        rb"(?<![A-Za-z0-9\-])(?:proxy-authorization|authorization|x-api-key|api-key|x-auth-token|"
        rb"x-access-token|set-cookie|cookie)[ \t]*:[ \t]*(?:(?:bearer|basic|token|digest|negotiate)[ \t]+)?"
        rb"(?=(" + _M + rb"|[^\r\n\x00\"']*[^\s\x00\"']))", re.IGNORECASE), group=1,
        needles=(b"authorization", b"api-key", b"x-auth-token", b"x-access-token", b"cookie"), fold=True),
    # --api-key V, --api-key=V, argv NUL-separated, or a JSON list ["--hf-token", "V"]
    Detector("flag", re.compile(
        rb"(?<![A-Za-z0-9_\-])(--?[A-Za-z][A-Za-z0-9_\-]*)(?:=|[ \x00]+|\"\s*,\s*\")(?=(" + _M +
        rb"|(?!--)[^\s\x00\"']+))"), group=2, name_group=1, needles=_NAME_WORDS, fold=True),
    Detector("json-field", re.compile(
        rb"\"([A-Za-z0-9_.\-]+)\"\s*:\s*\"(?=(" + _M + rb"|" + _ESCAPED + rb")\")"), group=2, name_group=1,
        needles=_NAME_WORDS, fold=True),
    # NAME=V in env blocks, unit files, logs, URLs (?token=V), Python reprs (api_key='V'),
    # Prometheus labels ({api_key="V"})
    Detector("assignment", re.compile(
        rb"(?<![A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_.\-]*)=(?=(" + _M + rb"|" + _QUOTED + rb"|" + _BARE + rb"))"),
        group=2, name_group=1, needles=_NAME_WORDS, fold=True),
)


# Every needle of every detector, lower-cased, in one regex: text in which none occurs (most
# command lines, stderr, short values) skips the 14 detectors at once. Lower-casing a
# case-sensitive needle only widens the test, so nothing a detector would find is skipped.
_ANY_NEEDLE = re.compile(b"|".join(re.escape(n.lower()) for d in DETECTORS for n in d.needles)) \
    if all(d.needles for d in DETECTORS) else None


@dataclass(frozen=True)
class Hit:
    """A secret a detector found: where, of which kind (never the value itself)."""

    kind: str
    start: int
    end: int


def _is_clear(value: bytes) -> bool:
    """A value that is no secret: already a marker, or an empty/None/boolean setting."""
    return MARKER.fullmatch(value) is not None or value.strip().lower() in EMPTY_VALUES


def _hit(det: Detector, m: re.Match[bytes]) -> Hit | None:
    if det.name_group and not is_secret_name(m.group(det.name_group).decode("utf-8", "replace")):
        return None
    start, end = m.span(det.group)
    value = m.group(det.group)
    if len(value) >= 2 and value[:1] == value[-1:] and value[:1] in (b"'", b'"'):
        start, end, value = start + 1, end - 1, value[1:-1]  # api_key='V' -> V
    if _is_clear(value):
        return None
    return Hit(det.kind, start, end)


def detector_hits(det: Detector, data: bytes, lowered: bytes | None = None) -> list[Hit]:
    if not det.may_match(data, data.lower() if lowered is None and det.fold else lowered or b""):
        return []
    return [h for h in (_hit(det, m) for m in det.pattern.finditer(data)) if h is not None]


def find_secrets(data: bytes, detectors: Iterable[Detector] = DETECTORS) -> Iterator[Hit]:
    """Every unredacted secret the detectors see in data (markers and empty values skipped)."""
    lowered = data.lower()
    for det in detectors:
        yield from detector_hits(det, data, lowered)


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
class Redactor:
    """Scrubs known secret values and credential-looking text; thread-safe."""

    enabled = True

    def __init__(self, key: bytes | None = None):
        self.key = key if key is not None else load_key()
        self._values: set[bytes] = set()
        self._lock = threading.Lock()

    def marker(self, value: bytes) -> bytes:
        digest = hmac.new(self.key, value, hashlib.sha256).hexdigest()[:10]
        return b"<redacted:" + digest.encode() + b">"

    def describe(self) -> dict[str, Any]:
        """What the manifest records: on, and which key (so markers compare across bundles)."""
        key_id = hashlib.sha256(b"pdforensics-key-id\0" + self.key).hexdigest()[:12]
        return {"enabled": True, "key_id": key_id}

    def learn(self, values: Iterable[bytes]) -> None:
        """Remember secret values (from environ) so they are scrubbed from every output."""
        with self._lock:
            self._values.update(v for v in values if len(v) >= MIN_LEARNED and not _is_clear(v))

    def environ(self, data: bytes) -> bytes:
        """Redact a NUL-separated environ block: values of secret-looking names."""
        out = []
        learned = []
        for entry in data.split(b"\0"):
            name, sep, value = entry.partition(b"=")
            if sep and value and is_secret_name(name.decode("utf-8", "replace")) and not _is_clear(value):
                learned.append(value)
                entry = name + b"=" + self.marker(value)
            out.append(entry)
        self.learn(learned)
        return self.text(b"\0".join(out))

    def text(self, data: bytes) -> bytes:
        """Scrub any output: learned values first, then every detector in turn."""
        with self._lock:
            values = sorted(self._values, key=len, reverse=True)
        for value in values:
            if value in data:
                data = data.replace(value, self.marker(value))
        lowered = data.lower()
        if _ANY_NEEDLE is not None and not _ANY_NEEDLE.search(lowered):
            return data
        for det in DETECTORS:
            hits = detector_hits(det, data, lowered)
            if hits:
                data = _replace_spans(data, hits, self.marker)
                lowered = data.lower()
        return data

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

    def _mark(self, value: bytes) -> bytes:
        return value if MARKER.fullmatch(value) else self.marker(value)

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

    def text(self, data: bytes) -> bytes:
        return data


# compatibility names for callers of the first version
VALUE_PATTERNS = [d.pattern for d in DETECTORS if d.kind not in ("flag", "json-field", "assignment",
                                                                   "http-header")]
FLAG_PATTERN = next(d.pattern for d in DETECTORS if d.kind == "flag")
HEADER_PATTERN = next(d.pattern for d in DETECTORS if d.kind == "http-header")
JSON_PATTERN = next(d.pattern for d in DETECTORS if d.kind == "json-field")
