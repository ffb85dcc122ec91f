"""The secrets in host text, shared by the redactor and `verify --secrets`.

Two passes, both linear: shapes (shapes.py: provider tokens, PEM keys, URL passwords, HTTP
credentials, password options of command lines) and assignments (assign.py: a
credential-named key followed by its value, in any common syntax). Each hit marks the span of
the secret value only (names, flags and quotes stay, so the evidence still says *which*
setting was there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.redact.assign import assignment_spans
from pdforensics.redact.names import is_secret_name
from pdforensics.redact.shapes import SHAPE_KINDS, shape_spans

__all__ = ["EMPTY_VALUES", "KINDS", "MARKER", "Hit", "find_secrets", "is_clear", "is_plain_number",
           "is_secret_name"]

MARKER = linear.compile(rb"<redacted:[0-9a-f]{10}>")
# Values that say "no secret set": kept, so the evidence shows a key is absent.
EMPTY_VALUES = frozenset({b"", b"none", b"null", b"nil", b"true", b"false", b"0", b"1", b"''", b'""',
                          b"~", b"<none>", b"[]", b"{}", b"*", b"-", b"|", b">", b"\\"})
ASSIGNMENT_KINDS = ("flag", "json-field", "dict-field", "yaml-field", "colon-field", "quoted-assignment",
                    "assignment", "netrc-password", "sql-password", "arrow", "tuple", "xml-element",
                    "next-line", "name-value-pair")
KINDS = SHAPE_KINDS + ASSIGNMENT_KINDS


@dataclass(frozen=True)
class Hit:
    """A secret a detector found: where, of which kind (never the value itself)."""

    kind: str
    start: int
    end: int


def is_clear(value: bytes) -> bool:
    """A value that is no secret: markers only, or an empty/None/boolean setting."""
    rest = MARKER.sub(b"", value) if b"<redacted:" in value else value
    if rest is not value and not rest.strip(b" \t,;:'\"/@"):
        return True
    return value.strip().lower() in EMPTY_VALUES


_PLAIN_NUMBER = linear.compile(rb"-?\d{1,6}(?:\.\d{1,6})?")


def is_plain_number(value: bytes) -> bool:
    """A short number (`4096`, `0.85`, `-1`): a setting, never a secret worth hiding, so an
    unknown flag or env var with such a value stays readable unless its name looks secret."""
    return _PLAIN_NUMBER.fullmatch(value) is not None


def _clean(kind: str, start: int, end: int, data: bytes) -> Hit | None:
    value = data[start:end]
    if len(value) >= 2 and value[:1] == value[-1:] and value[:1] in (b"'", b'"'):
        start, end, value = start + 1, end - 1, value[1:-1]  # a shape that took its quotes
    if is_clear(value):
        return None
    return Hit(kind, start, end)


def find_secrets(data: bytes) -> Iterator[Hit]:
    """Every unredacted secret in data (markers and empty values skipped): shapes first, so
    the most specific kind names a value both passes see."""
    lowered = data.lower()
    for kind, start, end in shape_spans(data, lowered):
        hit = _clean(kind, start, end, data)
        if hit is not None:
            yield hit
    for kind, start, end in assignment_spans(data):
        hit = _clean(kind, start, end, data)
        if hit is not None:
            yield hit
