"""The one reader of SGLang command lines: flags in every form argparse accepts.

`--a-b V`, `--a_b V`, `--a-b=V`; repeated flags (the last wins, as in argparse); values
that start with `-` when they are numbers or `-` itself (`--x -1`); a flag followed by
another flag has no value (`--port --host 0.0.0.0` gives no port, host 0.0.0.0). The
program (interpreter, its options, `-m module`, `sglang serve`, `smg launch`) is skipped.
Discovery, the rules and diff all read flags through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdforensics.catalog.model import Catalog

# Entry points: everything up to and including one of these is the program, not flags.
_PROGRAMS = ("sglang.launch_server", "sglang_router.launch_router", "sglang.launch_router",
             "sglang_router.launch_server", "smg.launch_router")
_SCRIPTS = ("launch_server.py", "launch_router.py")
_SUBCOMMANDS = {"sglang": "serve", "smg": "launch"}  # `sglang serve ...`, `smg launch ...`
_MULTI_NARGS = {"+", "*"}
_SWITCH_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}


def normalise_flag(token: str) -> str:
    """`--x_y=1` -> `--x-y`; short flags (`-x`) are kept as they are."""
    name = token.split("=", 1)[0]
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def program_end(argv: Sequence[str]) -> int:
    """Index of the first argument after the program (interpreter, -m module, subcommand)."""
    for i, tok in enumerate(argv):
        base = tok.rsplit("/", 1)[-1]
        if tok in _PROGRAMS or base in _SCRIPTS:
            return i + 1
        if i > 0 and _SUBCOMMANDS.get(argv[i - 1].rsplit("/", 1)[-1]) == tok:
            return i + 1
    return 1 if argv else 0  # otherwise the first word is the program


def _is_value(tok: str) -> bool:
    """May this word be a flag's value? Words not starting with `-`, `-` and numbers."""
    if not tok.startswith("-") or tok == "-":
        return True
    try:
        float(tok)
    except ValueError:
        return False
    return True


def read_flags(argv: Sequence[str], catalog: Catalog | None = None) -> dict[str, tuple[str, ...]]:
    """Flags of a command line: canonical `--name` -> its value words (empty for a switch).

    The catalog, when given, says which flags are switches (so the word after them is not
    their value), which take several words (nargs + or *), and maps aliases to canonical
    names. Without it a flag takes every value-like word up to the next flag (router worker
    lists). Stray positional words are skipped.
    """
    out: dict[str, tuple[str, ...]] = {}
    words = list(argv[program_end(argv):])
    i = 0
    while i < len(words):
        tok = words[i]
        i += 1
        if _is_value(tok) or tok == "--":
            continue
        name = normalise_flag(tok)
        info = catalog.flag(name) if catalog is not None and name.startswith("--") else None
        if info is not None:
            name = info.name
        if "=" in tok:
            out[name] = (tok.split("=", 1)[1],)
            continue
        if info is not None and info.action in _SWITCH_ACTIONS:
            out[name] = ()
            continue
        multi = info is None or (info.nargs or "") in _MULTI_NARGS
        values: list[str] = []
        while i < len(words) and _is_value(words[i]):
            values.append(words[i])
            i += 1
            if not multi:
                break
        out[name] = tuple(values)
    return out


def parse_flags(argv: Sequence[str], catalog: Catalog | None = None) -> dict[str, str | None]:
    """Flags as `--name` -> value words joined by a space (None for a bare switch)."""
    return {k: " ".join(v) if v else None for k, v in read_flags(argv, catalog).items()}


def flag_value(argv: Sequence[str], name: str) -> str | None:
    """The value of flag `name` (either spelling), its first word; None when absent or bare."""
    words = read_flags(argv).get(normalise_flag(name))
    return words[0] if words else None


def has_flag(argv: Sequence[str], name: str) -> bool:
    """Whether flag `name` (either spelling) appears, with or without a value."""
    return normalise_flag(name) in read_flags(argv)
