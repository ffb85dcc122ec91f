"""Read SGLang flags from a command line (``--flag value`` or ``--flag=value``)."""

from __future__ import annotations

from collections.abc import Sequence


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` (last one wins), ``""`` for a bare switch, None when absent."""
    found: str | None = None
    alt = flag.replace("-", "_")
    for i, a in enumerate(argv):
        name, eq, val = a.partition("=")
        if name not in (flag, alt):
            continue
        if eq:
            found = val
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            found = argv[i + 1]
        else:
            found = ""
    return found
