"""known_hosts files checked before any connection, and host-key fingerprints as ssh shows them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from pathlib import Path

from pdforensics.errors import ConfigError
from pdforensics.terminal import field


def fingerprint(blob: bytes) -> str:
    """``SHA256:...`` (unpadded base64 of the key blob's sha256), the form `ssh-keygen -l` prints."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _problem(line: str) -> str | None:
    """Why one known_hosts line cannot be read, or None when it can."""
    fields = line.split()
    if fields[0].startswith("@"):  # @cert-authority / @revoked marker
        fields = fields[1:]
    if len(fields) < 3:
        return "expected: hosts key-type base64-key"
    kind, b64 = fields[1], fields[2]
    try:
        blob = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        return "the key is not valid base64"
    if len(blob) < 4:
        return "the key is too short"
    (n,) = struct.unpack(">I", blob[:4])
    if blob[4:4 + n].decode("ascii", "replace") != kind:
        return f"the key's type does not match {kind!r}"
    return None


def check_known_hosts(path: str, where: str) -> None:
    """Raise ConfigError naming the file (missing, unreadable) or the first malformed line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ConfigError(f"{where}: known_hosts file {path} not found") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read known_hosts file {path}: {exc.strerror}") from None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        why = _problem(line)
        if why is not None:
            raise ConfigError(f"{where}: {path} line {n} is not a known_hosts line ({why}): "
                              f"{field(line[:100])}")
