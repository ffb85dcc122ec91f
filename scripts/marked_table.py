"""The command line both table scripts share: `[--update DOC] [ARTIFACT]` prints a Markdown
table built from a JSON artifact, or rewrites it between BEGIN/END markers of DOC."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run(table: Callable[[Any], str], default: str, begin: str, end: str) -> None:
    args = sys.argv[1:]
    doc = None
    if args[:1] == ["--update"]:
        doc, args = Path(args[1]), args[2:]
    text = table(json.loads(Path(args[0] if args else default).read_text()))
    if doc is None:
        print(text)
        return
    head, rest = doc.read_text().split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{text}\n{end}{tail}")
