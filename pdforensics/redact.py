"""Secret scrubbing applied to everything before it is written.

Values become `<redacted:` + 10 hex of HMAC-SHA256(key, value) + `>`: the same value always
gives the same marker under one key, so diffs can still tell "changed" from "same". The key
lives in the user's config dir (or PDFORENSICS_REDACT_KEY) and never enters a bundle.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path

import platformdirs

SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|COOKIE|"
    r"SESSION|_KEY$|^KEY$|_PASS$|DSN$|CONNECTION_STRING)",
    re.IGNORECASE,
)
# Things that look like credentials wherever they appear.
VALUE_PATTERNS = [
    re.compile(rb"hf_[A-Za-z0-9]{16,}"),
    re.compile(rb"sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(rb"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(rb"github_pat_[A-Za-z0-9_]{20,}"),
    re.compile(rb"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(rb"AKIA[0-9A-Z]{16}"),
    re.compile(rb"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
]
# `--api-key VALUE`, `--api-key=VALUE`, `Authorization: Bearer VALUE`, `"api_key": "VALUE"`
FLAG_PATTERN = re.compile(
    rb"(--?[A-Za-z0-9_\-]*(?:token|secret|passw(?:or)?d|api[-_]?key|access[-_]?key|credential)"
    rb"[A-Za-z0-9_\-]*)([= \x00]+)([^\s\x00\"']+)",
    re.IGNORECASE,
)
HEADER_PATTERN = re.compile(rb"((?:authorization|x-api-key|cookie)\s*:\s*(?:bearer\s+|basic\s+)?)"
                            rb"([^\s\"',]+)", re.IGNORECASE)
JSON_PATTERN = re.compile(
    rb"(\"[A-Za-z0-9_\-]*(?:token|secret|passw(?:or)?d|api[-_]?key|access[-_]?key|credential)"
    rb"[A-Za-z0-9_\-]*\"\s*:\s*\")([^\"]+)(\")",
    re.IGNORECASE,
)
MARKER = re.compile(rb"<redacted:[0-9a-f]{10}>")


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


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


class Redactor:
    """Scrubs known secret values and credential-looking text; thread-safe."""

    def __init__(self, key: bytes | None = None):
        self.key = key if key is not None else load_key()
        self._values: set[bytes] = set()
        self._lock = threading.Lock()

    def marker(self, value: bytes) -> bytes:
        digest = hmac.new(self.key, value, hashlib.sha256).hexdigest()[:10]
        return b"<redacted:" + digest.encode() + b">"

    def learn(self, values: Iterable[bytes]) -> None:
        """Remember secret values (from environ) so they are scrubbed from every output."""
        with self._lock:
            self._values.update(v for v in values if len(v) >= 4)

    def environ(self, data: bytes) -> bytes:
        """Redact a NUL-separated environ block: values of secret-looking names."""
        out = []
        learned = []
        for entry in data.split(b"\0"):
            name, sep, value = entry.partition(b"=")
            if sep and value and is_secret_name(name.decode("utf-8", "replace")) \
                    and not MARKER.fullmatch(value):
                learned.append(value)
                entry = name + b"=" + self.marker(value)
            out.append(entry)
        self.learn(learned)
        return self.text(b"\0".join(out))

    def text(self, data: bytes) -> bytes:
        """Scrub any output: learned values first, then credential-looking patterns."""
        with self._lock:
            values = sorted(self._values, key=len, reverse=True)
        for value in values:
            if value in data:
                data = data.replace(value, self.marker(value))
        for pattern in VALUE_PATTERNS:
            data = pattern.sub(lambda m: self.marker(m.group(0)), data)
        data = FLAG_PATTERN.sub(lambda m: m.group(1) + m.group(2) + self._mark(m.group(3)), data)
        data = HEADER_PATTERN.sub(lambda m: m.group(1) + self._mark(m.group(2)), data)
        return JSON_PATTERN.sub(lambda m: m.group(1) + self._mark(m.group(2)) + m.group(3), data)

    def _mark(self, value: bytes) -> bytes:
        return value if MARKER.fullmatch(value) else self.marker(value)

    def known_values(self) -> frozenset[bytes]:
        with self._lock:
            return frozenset(self._values)
