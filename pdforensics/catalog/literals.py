"""Evaluate literal-ish AST expressions (constants, lists, simple arithmetic) safely."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any


class NotLiteral(Exception):
    """The expression is not something we evaluate statically."""


_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.BitOr: operator.or_,
}
_MAX_LEN = 10_000
_EMPTY_CALLS: dict[str, Any] = {"list": [], "tuple": [], "dict": {}, "set": [], "frozenset": []}


def _json_ok(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return not (isinstance(value, int) and abs(value) > 2**63)
    if isinstance(value, list):
        return all(_json_ok(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_ok(v) for k, v in value.items())
    return False


def _sorted_set(items: list[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return items


class Evaluator:
    """Evaluate expressions against a table of known module constants ("NAME", "Cls.NAME")."""

    def __init__(self, symbols: Mapping[str, Any] | None = None) -> None:
        self.symbols = symbols or {}

    def value(self, node: ast.AST | None, depth: int = 0) -> Any:
        """The JSON-able value of `node`; raises NotLiteral otherwise."""
        if node is None or depth > 30:
            raise NotLiteral
        out = self._eval(node, depth)
        if not _json_ok(out):
            raise NotLiteral
        return out

    def try_value(self, node: ast.AST | None) -> tuple[bool, Any]:
        try:
            return True, self.value(node)
        except (NotLiteral, ArithmeticError, ValueError, TypeError, OverflowError,
                RecursionError, MemoryError):
            return False, None

    def _eval(self, node: ast.AST, depth: int) -> Any:
        d = depth + 1
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bytes, complex)) or node.value is Ellipsis:
                raise NotLiteral
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._eval(e, d) for e in self._elts(node.elts)]
        if isinstance(node, ast.Set):
            return _sorted_set([self._eval(e, d) for e in self._elts(node.elts)])
        if isinstance(node, ast.Dict):
            if None in node.keys:
                raise NotLiteral
            keys = [self._eval(k, d) for k in node.keys if k is not None]
            if not all(isinstance(k, str) for k in keys):
                raise NotLiteral
            return dict(zip(keys, (self._eval(v, d) for v in node.values), strict=True))
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, d)
            if isinstance(node.op, ast.USub) and isinstance(operand, (int, float)):
                return -operand
            if isinstance(node.op, ast.UAdd) and isinstance(operand, (int, float)):
                return +operand
            if isinstance(node.op, ast.Not):
                return not operand
            raise NotLiteral
        if isinstance(node, ast.BinOp):
            return self._binop(node, d)
        if isinstance(node, (ast.Name, ast.Attribute)):
            key = ast.unparse(node)
            if key in self.symbols:
                return self.symbols[key]
            raise NotLiteral
        if isinstance(node, ast.Call):
            return self._call(node, d)
        raise NotLiteral

    def _elts(self, elts: list[ast.expr]) -> list[ast.expr]:
        if len(elts) > _MAX_LEN or any(isinstance(e, ast.Starred) for e in elts):
            raise NotLiteral
        return elts

    def _binop(self, node: ast.BinOp, d: int) -> Any:
        fn = _BINOPS.get(type(node.op))
        if fn is None:
            raise NotLiteral
        left, right = self._eval(node.left, d), self._eval(node.right, d)
        if isinstance(node.op, ast.Pow) and (not isinstance(right, int) or abs(right) > 128):
            raise NotLiteral
        if isinstance(node.op, ast.LShift) and (not isinstance(right, int) or right > 128):
            raise NotLiteral
        if isinstance(node.op, ast.Mult) and (isinstance(left, (str, list))
                                              or isinstance(right, (str, list))):
            raise NotLiteral
        if isinstance(node.op, ast.Mod) and isinstance(left, str):
            raise NotLiteral
        return fn(left, right)

    def _call(self, node: ast.Call, d: int) -> Any:
        fn = ast.unparse(node.func)
        short = fn.rsplit(".", 1)[-1]
        if short in _EMPTY_CALLS and not node.args and not node.keywords:
            return _EMPTY_CALLS[short]
        if short in ("list", "tuple", "sorted") and len(node.args) == 1 and not node.keywords:
            inner = self._eval(node.args[0], d)
            if isinstance(inner, list):
                return sorted(inner) if short == "sorted" else inner
            raise NotLiteral
        if short == "field" and not node.args:
            kw = {k.arg: k.value for k in node.keywords}
            if "default" in kw:
                return self._eval(kw["default"], d)
            factory = kw.get("default_factory")
            if isinstance(factory, ast.Name) and factory.id in _EMPTY_CALLS:
                return _EMPTY_CALLS[factory.id]
            if isinstance(factory, ast.Lambda):
                return self._eval(factory.body, d)
        raise NotLiteral


def module_symbols(tree: ast.Module, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Module-level `NAME = <literal>` and class-level `Cls.NAME = <literal>` constants."""
    symbols: dict[str, Any] = dict(base or {})
    ev = Evaluator(symbols)

    def take(prefix: str, body: list[ast.stmt]) -> None:
        for stmt in body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(stmt, ast.Assign):
                targets, value = list(stmt.targets), stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            for t in targets:
                if isinstance(t, ast.Name):
                    ok, v = ev.try_value(value)
                    if ok:
                        symbols[prefix + t.id] = v
            if isinstance(stmt, ast.ClassDef) and not prefix:
                take(stmt.name + ".", stmt.body)

    take("", tree.body)
    return symbols


def text(node: ast.AST | None) -> str | None:
    """Source text of `node` (never raises)."""
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of odd trees must not crash a build
        return "<expr>"


def string_value(node: ast.AST | None, ev: Evaluator) -> str | None:
    """A string constant (implicit concatenation, `+`, parentheses) or None."""
    ok, v = ev.try_value(node)
    return v if ok and isinstance(v, str) else None
