"""Command lines -> flag name to value, order-insensitive (`--x=1` is `--x 1`)."""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics.catalog.model import Catalog

# Flags whose value is a list of words (nargs "+"/"*") keep every word up to the next flag.
_MULTI_NARGS = {"+", "*"}
_SWITCH_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}
# Entry points: everything up to and including one of these is the program, not flags.
_PROGRAMS = ("sglang.launch_server", "sglang_router.launch_router", "sglang.launch_router",
             "sglang_router.launch_server")


def normalise_flag(token: str) -> str:
    """`--x_y` -> `--x-y`; `-x` kept (short flags)."""
    name = token.split("=", 1)[0]
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def _program_end(argv: Sequence[str]) -> int:
    """Index of the first argument after the program (interpreter, -m module, `sglang serve`)."""
    for i, tok in enumerate(argv):
        if tok in _PROGRAMS or tok.rsplit("/", 1)[-1] in ("launch_server.py", "launch_router.py"):
            return i + 1
        if tok == "serve" and i > 0 and argv[i - 1].rsplit("/", 1)[-1] == "sglang":
            return i + 1
    # otherwise the first word is the program; a leading interpreter's options are skipped
    return 1 if argv else 0


def parse_flags(argv: Sequence[str], catalog: Catalog | None = None) -> dict[str, str | None]:
    """Flags of a command line: `--name` -> value (None for a bare switch).

    The catalog, when given, says which flags are switches (store_true/false) so the
    word after them is not taken as their value, and maps aliases to canonical names.
    Positional words (model paths of the router, etc.) attach to the flag before them.
    Repeated flags keep the last value, as argparse does.
    """
    out: dict[str, str | None] = {}
    words = list(argv[_program_end(argv):])
    i = 0
    while i < len(words):
        tok = words[i]
        i += 1
        if not tok.startswith("-") or tok in ("-", "--") or _is_number(tok):
            continue  # a stray positional word
        name = normalise_flag(tok)
        info = catalog.flag(name) if catalog is not None and name.startswith("--") else None
        if info is not None:
            name = info.name
        if "=" in tok:
            out[name] = tok.split("=", 1)[1]
            continue
        if info is not None and info.action in _SWITCH_ACTIONS:
            out[name] = None
            continue
        values: list[str] = []
        multi = info is None or (info.nargs or "") in _MULTI_NARGS
        while i < len(words) and (not words[i].startswith("-") or _is_number(words[i])):
            values.append(words[i])
            i += 1
            if not multi:
                break
        out[name] = " ".join(values) if values else None
    return out


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True
