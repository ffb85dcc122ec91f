"""The copy of a server's sglang files that `capture --with-sglang-source` keeps (JSON lines).

It lives with the catalog, which builds from it; the collector's parser re-exports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.errors import ParseError

_DUNDER_VERSION = linear.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", linear.M)


@dataclass(frozen=True)
class SglangSource:
    """The sglang files a server's interpreter would load, as `--with-sglang-source` copied them."""

    package: str
    metadata_version: str | None
    files: tuple[tuple[str, str], ...]  # (path relative to the package, text)

    @property
    def version(self) -> str | None:
        text = dict(self.files).get("version.py") or dict(self.files).get("__init__.py") or ""
        m = _DUNDER_VERSION.search(text)
        return m.group(1) if m else self.metadata_version


def parse_sglang_source(text: str) -> SglangSource:
    """JSON lines: a header {"package", "metadata_version"}, then one {"path", "text"} per file.
    A line cut short by the byte cap ends the list (what came before is kept)."""
    lines = text.splitlines()
    if not lines:
        return SglangSource("", None, ())
    try:
        head = json.loads(lines[0])
        package, version = str(head["package"]), head.get("metadata_version")
    except (ValueError, KeyError, TypeError):
        raise ParseError("not an sglang source archive (no header line)", lines[0][:200], 1) from None
    files = []
    for line in lines[1:]:
        try:
            row = json.loads(line)
            files.append((str(row["path"]), str(row["text"])))
        except (ValueError, KeyError, TypeError):
            break
    return SglangSource(package, str(version) if version else None, tuple(files))
