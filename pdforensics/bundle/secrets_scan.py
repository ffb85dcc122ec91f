"""`verify --secrets`: scan every file of a bundle with the redactor's own detectors, a
high-entropy token check (redact_entropy) for secrets of a shape no detector knows, and a second
opinion from another scanner's rule set (second_opinion.py: detect-secrets).

A hit names the file, the line and the kind of secret, with a preview that never shows
the value in full. Markers (`<redacted:...>`) and empty settings (`api_key=None`) are no hits.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path

from pdforensics.bundle import second_opinion
from pdforensics.errors import BundleError
from pdforensics.redact.entropy import random_tokens
from pdforensics.redact.redactor import MARKER, find_secrets
from pdforensics.untrusted.read import read_inside

_WORD_END = (b"", b" ", b"\t", b"\r", b"\n", b"<", b'"', b"'", b",", b";", b")", b"]", b"}")


@dataclass(frozen=True)
class SecretHit:
    """One unredacted secret in a bundle file."""

    path: str  # relative to the bundle
    line: int  # 1-based
    kind: str  # detector kind: huggingface-token, flag, pem-private-key, ...
    preview: str  # a few leading characters and the length, never the whole value

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} ({self.preview})"


def preview(value: bytes) -> str:
    """`hf_…(37 chars)`: at most a quarter of the value (4 characters) is shown."""
    text = value.decode("utf-8", "replace")
    shown = text[:min(4, len(text) // 4)]
    return f"{shown}…({len(text)} chars)"


def _starts_redacted(data: bytes, start: int) -> bool:
    """The value opens with a whole marker then a word's end (`Bearer <redacted:…> pid 7: …`,
    `<redacted:…></code>`): it was redacted where it was collected, and the text after it,
    joined on later (argv, a message, markup), is no part of it. Shapes and the entropy check
    still read that text on their own."""
    m = MARKER.match(data, start)
    return m is not None and data[m.end():m.end() + 1] in _WORD_END


def scan_bytes(data: bytes, rel: str, budget: second_opinion.Budget | None = None) -> list[SecretHit]:
    """Hits in one file's bytes; HTML is unescaped first (a report shows text, not markup)."""
    if rel.endswith((".html", ".htm")):
        data = html.unescape(data.decode("utf-8", "replace")).encode()
    hits = []
    spans: list[tuple[str, int, int]] = []
    for h in find_secrets(data):  # one hit per value: the first (most specific) detector names it
        if _starts_redacted(data, h.start):
            continue
        if not any(h.start < he and hs < h.end for _k, hs, he in spans):
            spans.append((h.kind, h.start, h.end))
    # the redactor's detectors, plus any random-looking token no detector knows the shape of
    spans += [("high-entropy", s, e) for s, e in random_tokens(data)
              if not any(s < he and hs < e for _k, hs, he in spans)]
    if budget is not None and budget.complete:  # the second opinion, where ours saw nothing
        spans += [(f"detect-secrets: {o.kind}", o.start, o.end) for o in second_opinion.opinions(data, budget)
                  if not any(o.start < he and hs < o.end for _k, hs, he in spans)]
    for kind, start, end in spans:
        line = data.count(b"\n", 0, start) + 1
        hits.append(SecretHit(rel, line, kind, preview(data[start:end])))
    return sorted(set(hits), key=lambda h: (h.path, h.line, h.kind))


def scan_bundle(path: str | Path, budget: second_opinion.Budget | None = None) -> tuple[list[SecretHit], int]:
    """(hits, files scanned) for every regular file under the bundle directory; with a budget,
    detect-secrets' opinion too."""
    root = Path(path)
    if not root.is_dir():
        raise BundleError(f"{root} is not a bundle directory")
    hits: list[SecretHit] = []
    scanned = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in sorted(files):
            f = Path(dirpath) / name
            if f.is_symlink() or not f.is_file():
                continue
            rel = f.relative_to(root).as_posix()
            try:
                data = read_inside(root, rel, rel)
            except OSError as exc:
                raise BundleError(f"{rel}: cannot read: {exc.strerror or exc}") from None
            scanned += 1
            hits.extend(scan_bytes(data, rel, budget))
    return sorted(hits, key=lambda h: (h.path, h.line, h.kind)), scanned



def scan_report(path: str | Path, second: bool = True) -> tuple[list[str], list[str]]:
    """(one line per hit, `FILE:LINE: unredacted secret: KIND (preview)`; notes about the scan)
    for `verify --secrets`."""
    budget = second_opinion.Budget() if second and second_opinion.available() else None
    hits, _scanned = scan_bundle(path, budget)
    notes = []
    if second and budget is None:
        notes.append("note: the second opinion (detect-secrets) is not installed: only pdforensics' own checks ran")
    elif budget is not None and not budget.complete:
        notes.append(f"note: the second opinion (detect-secrets) stopped after its {second_opinion.BUDGET_S:.0f} s "
                     "CPU budget: the files after that were checked by pdforensics' own checks only")
    return [f"{h.path}:{h.line}: unredacted secret: {h.kind} ({h.preview})" for h in hits], notes


def explain(path: str | Path) -> list[str]:
    """What redaction did to this bundle, from its manifest: by source and kind, with counts
    and never a value (`verify --secrets --explain`)."""
    import json

    from pdforensics.untrusted.read import read_inside

    root = Path(path)
    try:
        manifest = json.loads(read_inside(root, "manifest.json", "manifest.json"))
    except (OSError, ValueError, RecursionError) as exc:
        raise BundleError(f"manifest.json: cannot read: {exc}") from None
    red = manifest.get("redaction") if isinstance(manifest, dict) else None
    if not isinstance(red, dict):
        return ["redaction: the manifest does not say (a bundle older than this version?)"]
    if red.get("enabled") is False:
        return ["redaction: OFF (captured with --no-redact): every value is as collected"]
    rows = red.get("redacted")
    if not isinstance(rows, list):
        return ["redaction: on; this bundle's manifest has no per-kind counts (made before they were kept)"]
    lines = [f"redaction: on (key {red.get('key_id', '?')}); what was replaced by a marker, by source and kind:"]
    for r in rows:
        if isinstance(r, dict):
            lines.append(f"  {str(r.get('source'))[:60]:<28} {str(r.get('kind'))[:60]:<36} {r.get('count')}")
    if len(lines) == 1:
        lines.append("  nothing (no secret-looking value was seen)")
    return lines
