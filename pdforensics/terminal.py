"""Host text made safe for the operator's terminal.

Everything pdforensics prints may carry text that came from a host (stderr, cmdlines, model
paths, log lines, finding evidence, names from a cluster file). A host is untrusted: its text
could clear the screen (ESC [2J), write the clipboard (OSC 52), plant links (OSC 8), retitle
the window, overwrite a line with CR or backspace, or reorder it with bidi overrides.

`neutralise` shows every such character visibly instead: C0 controls as ``\\x1b``, DEL, C1
controls and bidi/invisible-format characters as ``\\u007f`` / ``\\u009b`` / ``\\u202e``.
json.dumps escapes every C0 control itself and the ``\\uXXXX`` form is a valid JSON escape, so
`--json` output (even with ensure_ascii=False) stays valid, identical JSON after the filter.

`install` wraps sys.stdout and sys.stderr so that *every* write of the process passes through
`neutralise` (newline and tab kept): no echo site can forget it. The tool's own control
sequences (the watch status line) go through `write_control`, which bypasses the filter.
"""

from __future__ import annotations

import errno
import re
import sys
from typing import Any, TextIO

# C0 except \t and \n, DEL, C1; bidi embeddings/overrides/isolates, zero-width and marks
_BIDI = "\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff"
_STREAM_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f{_BIDI}]")
_FIELD_UNSAFE = re.compile(f"[\x00-\x1f\x7f\x80-\x9f{_BIDI}]")


def _show(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x20:
        return {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}.get(c, f"\\x{c:02x}")
    return f"\\u{c:04x}"


def neutralise(text: str) -> str:
    """Text with every terminal control shown visibly; newlines and tabs kept."""
    return _STREAM_UNSAFE.sub(_show, text)


def field(text: object) -> str:
    """One single-line field (a host's stderr line, a cmdline, a title): controls shown
    visibly and newlines too, so host text cannot forge a line of the tool's own output."""
    return _FIELD_UNSAFE.sub(_show, str(text))


class SafeStream:
    """A text stream whose writes are neutralised; everything else is the wrapped stream's."""

    def __init__(self, raw: TextIO):
        self.raw = raw

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            return self.raw.write(text)
        try:
            self.raw.write(neutralise(text))
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            # a hung-up terminal (dropped SSH/bastion session): the capture still finishes
            # its bundle, so what it would have printed is dropped, not raised
        return len(text)

    def flush(self) -> None:
        try:
            self.raw.flush()
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def install() -> None:
    """Filter this process's stdout and stderr (idempotent)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, SafeStream):
            setattr(sys, name, SafeStream(stream))


def write_control(stream: TextIO | SafeStream, sequence: str) -> None:
    """The tool's own control sequence (e.g. CR + erase line), written past the filter."""
    raw = stream.raw if isinstance(stream, SafeStream) else stream
    raw.write(sequence)
