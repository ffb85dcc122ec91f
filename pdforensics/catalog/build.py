"""Build a Catalog from sglang's source by reading its AST (sglang is never imported)."""

from __future__ import annotations

import ast
import os
import tempfile
from collections import ChainMap
from pathlib import Path
from typing import Any

from pdforensics import linear
from pdforensics.catalog.env_merge import merge_envs
from pdforensics.catalog.env_reads import all_reads
from pdforensics.catalog.envs import extract_envs
from pdforensics.catalog.flags import (
    Field,
    Module,
    field_defaults,
    flag_from_field,
    flags_from_add_argument,
    record_fields,
)
from pdforensics.catalog.literals import Evaluator, module_symbols
from pdforensics.catalog.metrics import HINTS, extract_metrics
from pdforensics.catalog.model import Catalog, EnvInfo, FlagInfo, MetricInfo
from pdforensics.catalog.source import SourceTree, open_source, parse_module
from pdforensics.errors import PdforensicsError

_DUNDER_VERSION = linear.compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", linear.M)

SERVER_ARGS = "srt/server_args.py"
ENVIRON = "srt/environ.py"
_METRIC_DIRS = ("srt/metrics/", "srt/observability/")


def _parse(tree: SourceTree, rel: str) -> ast.Module | None:
    src = tree.read(rel)
    return None if src is None else parse_module(src)


def _version(tree: SourceTree) -> str:
    for rel in ("_version.py", "version.py"):
        src = tree.read(rel)
        if src is None:
            continue
        m = _DUNDER_VERSION.search(src)
        if m:
            return m.group(1)
    return tree.metadata_version or "unknown"


def _flag_modules(tree: SourceTree) -> list[Module]:
    rels = [SERVER_ARGS] + [n for n in tree.names() if n.startswith("srt/arg_groups/")]
    parsed = [(rel, t) for rel in rels if (t := _parse(tree, rel)) is not None]
    pool: dict[str, Any] = {}
    per_module = []
    for _rel, t in parsed:
        syms = module_symbols(t)
        per_module.append(syms)
        for k, v in syms.items():
            pool.setdefault(k, v)
    return [Module(rel, t, Evaluator(ChainMap(syms, pool)))
            for (rel, t), syms in zip(parsed, per_module, strict=True)]


def build_flags(modules: list[Module]) -> dict[str, FlagInfo]:
    """Flags from `A[...]` record fields, then from explicit `add_argument` calls."""
    flags: dict[str, FlagInfo] = {}
    all_fields: list[Field] = []
    record_flags: list[FlagInfo] = []
    for mod in modules:
        for _cls, fields in record_fields(mod).items():
            all_fields.extend(fields)
            for f in fields:
                info = flag_from_field(f, mod.ev)
                if info is not None:
                    record_flags.append(info)
    defaults = field_defaults(all_fields)
    # ServerArgs' own fields win when two classes share a field name
    for mod in modules:
        if mod.rel == SERVER_ARGS:
            for cls, fields in record_fields(mod).items():
                if cls == "ServerArgs":
                    defaults.update(field_defaults(fields))
    for info in record_flags:
        flags.setdefault(info.name, info)
    for mod in modules:
        for info in flags_from_add_argument(mod, defaults):
            if mod.rel == SERVER_ARGS or info.name not in flags:
                flags[info.name] = info
    return flags


def build_envs(tree: SourceTree) -> dict[str, EnvInfo]:
    """Env vars declared in environ.py, joined with those read anywhere in the package."""
    declared: dict[str, EnvInfo] = {}
    src = tree.read(ENVIRON)
    t = None if src is None else parse_module(src)
    if src is not None and t is not None:
        try:
            declared = extract_envs(src, ENVIRON, Evaluator(module_symbols(t)))
        except (ValueError, RecursionError, MemoryError):
            declared = {}
    return merge_envs(declared, all_reads(tree), ENVIRON)


def build_metrics(tree: SourceTree) -> dict[str, MetricInfo]:
    """Metrics from the metrics/observability modules and any srt module using prometheus."""
    metrics: dict[str, MetricInfo] = {}
    rels = [n for n in tree.names() if n.startswith("srt/")]
    rels.sort(key=lambda r: (not r.startswith(_METRIC_DIRS), r))
    for rel in rels:
        src = tree.read(rel)
        if src is None or not any(h in src for h in HINTS):
            continue
        t = parse_module(src)
        if t is None:
            continue
        for m in extract_metrics(t, rel, Evaluator(module_symbols(t))):
            metrics.setdefault(m.name, m)
    return metrics


def build_from_tree(tree: SourceTree) -> Catalog:
    if tree.read(SERVER_ARGS) is None:
        raise PdforensicsError(f"not an sglang tree (no sglang/{SERVER_ARGS}): {tree.description}")
    return Catalog(
        version=_version(tree),
        source=tree.description,
        flags=build_flags(_flag_modules(tree)),
        env_vars=build_envs(tree),
        metrics=build_metrics(tree),
    )


def build_catalog(path: Path) -> Catalog:
    """Build the catalog of the sglang wheel, source tree or site-packages at `path`."""
    tree = open_source(Path(path))
    try:
        return build_from_tree(tree)
    finally:
        tree.close()


def write_catalog(catalog: Catalog, out: Path) -> Path:
    """Write `catalog` as JSON to `out` atomically; return `out`."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".catalog-", suffix=".json", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(catalog.to_json())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
