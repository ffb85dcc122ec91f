"""Join the env vars declared in `environ.py` with the reads found anywhere in the source."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from pdforensics.catalog.env_reads import EnvRead
from pdforensics.catalog.model import EnvInfo


def _shown(value: object) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _from_reads(name: str, reads: list[EnvRead]) -> EnvInfo:
    """An env var known only from the places that read it."""
    with_default = [r for r in reads if r.has_default]
    shown = {(_shown(r.default) if r.default_expr is None else r.default_expr) for r in with_default}
    default, expr = None, None
    if len(shown) == 1:
        first = with_default[0]
        default, expr = first.default, first.default_expr
    elif len(shown) > 1:
        expr = "varies: " + "; ".join(
            f"{_shown(r.default) if r.default_expr is None else r.default_expr} "
            f"({r.module}:{r.line})" for r in with_default)
    typ = next((r.type for r in reads if r.type), None)
    if typ is None and len(shown) == 1 and with_default[0].default_expr is None:
        v = with_default[0].default
        typ = {bool: "bool", int: "int", float: "float", str: "str"}.get(type(v))
    origin = with_default[0] if with_default else reads[0]
    return EnvInfo(name=name, type=typ, default=default, default_expr=expr,
                   origin=f"{origin.module}:{origin.line}",
                   read_by=tuple(sorted({r.module for r in reads})))


def merge_envs(declared: dict[str, EnvInfo], reads: Iterable[EnvRead],
               environ_rel: str) -> dict[str, EnvInfo]:
    """Declared env vars (their default wins) plus every env var read elsewhere.

    `envs.X` uses count as reads only of a declared X (an `envs` attribute that is not
    declared is some other object's)."""
    by_name: dict[str, list[EnvRead]] = defaultdict(list)
    alias_of = {a: k for k, info in declared.items() for a in info.aliases}
    for r in reads:
        name = alias_of.get(r.name, r.name)
        if r.declared and name not in declared:
            continue
        if r.module == environ_rel and name in declared:
            continue
        by_name[name].append(r)
    out = dict(declared)
    for name, rs in by_name.items():
        if name in out:
            out[name] = replace(out[name], read_by=tuple(sorted({r.module for r in rs})))
        else:
            out[name] = _from_reads(name, rs)
    return dict(sorted(out.items()))
