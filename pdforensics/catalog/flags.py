"""Extract server flags from `server_args.py` and `arg_groups/` ASTs.

Two declaration styles exist across 0.5.x and both are read:
- `parser.add_argument("--x", type=int, default=ServerArgs.x, help=...)` calls, with
  defaults resolved from the ServerArgs dataclass field when they are literals;
- record fields `x: A[T, "help"] = default` / `A[T, Arg(help=..., choices=...)]`
  that `add_cli_args_from_dataclass` turns into flags (0.5.15+).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from pdforensics.catalog.literals import Evaluator, string_value, text
from pdforensics.catalog.model import FlagInfo
from pdforensics.catalog.source import parse_expression

_ANNOTATED = {"A", "Annotated", "typing.Annotated"}
_OPTIONAL_HEADS = {"Optional", "typing.Optional"}
_SCALARS = {"str": "str", "int": "int", "float": "float"}


@dataclass(frozen=True)
class Module:
    """A parsed module: relative path, tree and constant symbols."""

    rel: str
    tree: ast.Module
    ev: Evaluator


@dataclass(frozen=True)
class Field:
    """A record/dataclass field: its annotation and default."""

    name: str
    annotation: ast.expr
    default: ast.expr | None
    origin: str


def help_text(node: ast.AST | None, ev: Evaluator) -> str | None:
    """Help as text: literal strings exactly, f-strings with `{expr}` placeholders."""
    if node is None:
        return None
    s = string_value(node, ev)
    if s is not None:
        return s
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            elif isinstance(v, ast.FormattedValue):
                parts.append("{" + (text(v.value) or "") + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = help_text(node.left, ev), help_text(node.right, ev)
        if left is not None and right is not None:
            return left + right
    return text(node)


def record_fields(mod: Module) -> dict[str, list[Field]]:
    """Fields of every class in `mod`: class name -> fields in order."""
    out: dict[str, list[Field]] = {}
    for node in ast.walk(mod.tree):
        if not isinstance(node, ast.ClassDef):
            continue
        fields = []
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                fields.append(Field(stmt.target.id, stmt.annotation, stmt.value,
                                    f"{mod.rel}:{stmt.lineno}"))
        out[node.name] = fields
    return out


def _annotated_parts(ann: ast.expr) -> tuple[ast.expr, list[ast.expr]] | None:
    """(inner type, metadata) of `A[T, ...]`, or None for a plain annotation."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        parsed = parse_expression(ann.value)
        if parsed is None:
            return None
        ann = parsed
    if not isinstance(ann, ast.Subscript) or text(ann.value) not in _ANNOTATED:
        return None
    sl = ann.slice
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    if len(elts) < 2:
        return None
    return elts[0], list(elts[1:])


def _unwrap_optional(tp: ast.expr) -> ast.expr:
    if isinstance(tp, ast.Subscript) and text(tp.value) in _OPTIONAL_HEADS:
        return tp.slice
    if isinstance(tp, ast.BinOp) and isinstance(tp.op, ast.BitOr):
        sides = [tp.left, tp.right]
        rest = [s for s in sides if not (isinstance(s, ast.Constant) and s.value is None)]
        if len(rest) == 1:
            return rest[0]
    if isinstance(tp, ast.Subscript) and text(tp.value) in {"Union", "typing.Union"}:
        sl = tp.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        rest = [e for e in elts if not (isinstance(e, ast.Constant) and e.value is None)]
        if len(rest) == 1:
            return rest[0]
    return tp


def _head(tp: ast.expr) -> str | None:
    node = tp.value if isinstance(tp, ast.Subscript) else tp
    name = text(node) or ""
    return name.rsplit(".", 1)[-1]


def _value(ev: Evaluator, node: ast.AST | None) -> tuple[Any, str | None]:
    """(literal value, None) or (None, source text)."""
    if node is None:
        return None, None
    ok, v = ev.try_value(node)
    return (v, None) if ok else (None, text(node))


def _choices(ev: Evaluator, node: ast.AST | None) -> tuple[tuple[Any, ...] | None, str | None]:
    if node is None:
        return None, None
    ok, v = ev.try_value(node)
    if ok and isinstance(v, list):
        return tuple(v), None
    if ok and isinstance(v, dict):
        return tuple(v), None
    return None, text(node)


def flag_from_field(f: Field, ev: Evaluator) -> FlagInfo | None:
    """The flag `add_cli_args_from_dataclass` registers for one `A[...]` field, if any."""
    parts = _annotated_parts(f.annotation)
    if parts is None:
        return None
    inner, meta = parts
    arg: dict[str, ast.expr] = {}
    found = False
    for m in meta:
        s = string_value(m, ev)
        if s is not None:
            arg, found = {"help": m}, True
            break
        if isinstance(m, ast.Call) and _head(m.func) == "Arg":
            arg = {k.arg: k.value for k in m.keywords if k.arg}
            if m.args:
                arg.setdefault("help", m.args[0])
            found = True
            break
    if not found:
        return None
    ok_no_cli, no_cli = ev.try_value(arg.get("no_cli"))
    if ok_no_cli and no_cli:
        return None
    cli_name = string_value(arg.get("cli_name"), ev) or "--" + f.name.replace("_", "-")
    ok_al, aliases = ev.try_value(arg.get("aliases"))
    alias_t = tuple(a for a in aliases if isinstance(a, str)) if ok_al and aliases else ()
    default, default_expr = _value(ev, f.default)
    has_default = f.default is not None
    auto_dest = cli_name.lstrip("-").replace("-", "_")
    dest = f.name if f.name != auto_dest else None
    help_ = help_text(arg.get("help"), ev)
    choices, choices_expr = _choices(ev, arg.get("choices"))
    type_parser = text(arg.get("type_parser")) if "type_parser" in arg else None
    nargs, _ = _value(ev, arg.get("nargs"))
    base = FlagInfo(name=cli_name, default=default, default_expr=default_expr, help=help_,
                    choices=choices, choices_expr=choices_expr, dest=dest or f.name,
                    aliases=alias_t, origin=f.origin)
    if "action" in arg:
        return replace(base, action=_action_text(ev, arg["action"]))
    tp = _unwrap_optional(inner)
    head = _head(tp)
    if head == "Literal" and isinstance(tp, ast.Subscript):
        ok, lits = ev.try_value(tp.slice)
        lit_list = (lits if isinstance(lits, list) else [lits]) if ok else None
        if choices is None and choices_expr is None and lit_list is not None:
            choices = tuple(lit_list)
        first = type(lit_list[0]).__name__ if lit_list else "str"
        return replace(base, type=type_parser or _SCALARS.get(first, "str"), choices=choices)
    if head in ("List", "list") and type_parser is None:
        elem = tp.slice if isinstance(tp, ast.Subscript) else None
        return replace(base, type=_SCALARS.get(_head(elem) or "", "str") if elem else "str",
                       nargs=nargs or "+")
    if head == "bool":
        return replace(base, action="store_true", default=default if has_default else None)
    required = default is None and default_expr is None and not has_default
    ok_req, req = ev.try_value(arg.get("required"))
    if ok_req and isinstance(req, bool):
        required = req
    return replace(base, type=type_parser or _SCALARS.get(head or "", "str"), nargs=nargs,
                   required=required)


def _action_text(ev: Evaluator, node: ast.AST) -> str | None:
    s = string_value(node, ev)
    return s if s is not None else text(node)


def field_defaults(fields: Iterable[Field]) -> dict[str, ast.expr | None]:
    """Field name -> default expression (None when the field has no default)."""
    return {f.name: f.default for f in fields}


def flags_from_add_argument(mod: Module, defaults: dict[str, ast.expr | None]) -> list[FlagInfo]:
    """Flags from every `*.add_argument("--x", ...)` call in `mod`."""
    ev = mod.ev
    out = []
    for node in ast.walk(mod.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [string_value(a, ev) for a in node.args]
        opts = [n for n in names if n and n.startswith("-")]
        longs = [n for n in opts if n.startswith("--")]
        if not opts:
            continue
        primary = longs[0] if longs else opts[0]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = _action_text(ev, kw["action"]) if "action" in kw else None
        dest = string_value(kw.get("dest"), ev) or primary.lstrip("-").replace("-", "_")
        default, default_expr = _resolve_default(kw.get("default"), defaults, ev)
        if "default" not in kw:
            if action in ("store_true",):
                default = False
            elif action in ("store_false",):
                default = True
            elif dest in defaults and defaults[dest] is not None:
                default, default_expr = _value(ev, defaults[dest])
        choices, choices_expr = _choices(ev, kw.get("choices"))
        nargs, nargs_expr = _value(ev, kw.get("nargs"))
        ok_req, req = ev.try_value(kw.get("required"))
        out.append(FlagInfo(
            name=primary,
            type=text(kw["type"]) if "type" in kw else None,
            default=default, default_expr=default_expr,
            help=help_text(kw.get("help"), ev),
            choices=choices, choices_expr=choices_expr, action=action, dest=dest,
            nargs=str(nargs) if nargs is not None else nargs_expr,
            aliases=tuple(o for o in opts if o != primary),
            required=bool(req) if ok_req else False,
            origin=f"{mod.rel}:{node.lineno}",
        ))
    return out


def _resolve_default(node: ast.expr | None, defaults: dict[str, ast.expr | None],
                     ev: Evaluator) -> tuple[Any, str | None]:
    """`default=ServerArgs.x` / `_declared_default("x")` -> the field's literal default."""
    if node is None:
        return None, None
    field_name = None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "ServerArgs":
        field_name = node.attr
    elif isinstance(node, ast.Call) and _head(node.func) in ("_declared_default",) \
            and node.args:
        field_name = string_value(node.args[0], ev)
    if field_name is not None and field_name in defaults:
        target = defaults[field_name]
        if target is None:
            return None, None
        v, expr = _value(ev, target)
        return v, expr
    return _value(ev, node)
