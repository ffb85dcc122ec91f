"""Extract env vars from `srt/environ.py` (`class Envs: NAME = EnvInt(300)` declarations)."""

from __future__ import annotations

import ast

from pdforensics import linear
from pdforensics.catalog.literals import Evaluator, string_value, text
from pdforensics.catalog.model import EnvInfo
from pdforensics.catalog.source import parse_module

_INLINE_COMMENT = linear.compile(r"\)\s*#\s*(.+)$")

_TYPES = {
    "EnvBool": "bool", "EnvInt": "int", "EnvFloat": "float", "EnvStr": "str",
    "EnvTuple": "tuple", "EnvJSON": "json",
}
_RULE = linear.compile(r"^[\s#=\-*~]*$")


def _env_type(func: ast.expr) -> str | None:
    name = (text(func) or "").rsplit(".", 1)[-1]
    if not name.startswith("Env"):
        return None
    base = name.removesuffix("WithAlias")
    return _TYPES.get(base, base)


def _comment_above(lines: list[str], lineno: int) -> str | None:
    """The contiguous comment block right above 1-based `lineno` (rule lines dropped)."""
    out: list[str] = []
    i = lineno - 2
    while i >= 0:
        stripped = lines[i].strip()
        if not stripped.startswith("#"):
            break
        if not _RULE.match(stripped) and not stripped.startswith("# fmt:") \
                and "noqa" not in stripped:
            out.append(stripped.lstrip("#").strip())
        i -= 1
    out.reverse()
    return " ".join(x for x in out if x) or None


def _inline_comment(line: str) -> str | None:
    # only a trailing "# ..." after the closing paren of the declaration
    m = _INLINE_COMMENT.search(line)
    return m.group(1).strip() if m else None


def extract_envs(source: str, rel: str, ev: Evaluator) -> dict[str, EnvInfo]:
    """Env vars declared in the `Envs` class of `source` (environ.py text)."""
    tree = parse_module(source)
    if tree is None:
        return {}
    lines = source.splitlines()
    out: dict[str, EnvInfo] = {}
    for cls in ast.walk(tree):
        if not (isinstance(cls, ast.ClassDef) and cls.name == "Envs"):
            continue
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            else:
                continue
            if not isinstance(value, ast.Call):
                continue
            env_type = _env_type(value.func)
            if env_type is None:
                continue
            kw = {k.arg: k.value for k in value.keywords if k.arg}
            default_node = value.args[0] if value.args else kw.get("default")
            default, default_expr = None, None
            if default_node is not None:
                ok, v = ev.try_value(default_node)
                default, default_expr = (v, None) if ok else (None, text(default_node))
            alias = string_value(kw.get("deprecated_name"), ev)
            if alias is None and len(value.args) > 1:
                alias = string_value(value.args[1], ev)
            line = lines[stmt.lineno - 1] if stmt.lineno - 1 < len(lines) else ""
            end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
            end_line = lines[end - 1] if end - 1 < len(lines) else line
            help_ = _comment_above(lines, stmt.lineno) or _inline_comment(end_line)
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = EnvInfo(
                        name=t.id, type=env_type, default=default, default_expr=default_expr,
                        help=help_, aliases=(alias,) if alias else (),
                        origin=f"{rel}:{stmt.lineno}",
                    )
    return out
