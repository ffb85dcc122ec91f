"""Find env vars read anywhere in sglang's source: `os.getenv("X", d)`, `os.environ.get(...)`,
`os.environ["X"]`, `"X" in os.environ`, sglang's helpers (`get_bool_env_var`,
`get_int_env_var`, `get_float_env_var`, and any function that passes its first parameter
to one of those) and `envs.X` uses of the `environ.py` declarations.

Helpers are recognised by what they do (their first parameter names the env var they
read) and by a name that says so (it contains "env": `apply(x)` reading `os.environ` is
not taken as a helper, since every `.apply(...)` call would then count as a read), not by
a fixed list, so a release that renames or adds one is still read. Speed
matters (a 0.5.x wheel has ~5000 modules): text is searched first, and only the call
expressions found and the functions named "...env..." are parsed with `ast`.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.catalog.literals import Evaluator, text
from pdforensics.catalog.source import SourceTree, parse_expression, parse_module

_DIRECT = {"os.getenv", "getenv", "os.environ.get", "environ.get"}
_ENVIRON = {"os.environ", "environ"}
_NAME = linear.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CASTS = {"int": "int", "float": "float", "bool": "bool", "str": "str"}
_SUBSCRIPT = linear.compile(r"""\bos\.environ\[\s*(?:'([A-Za-z_][A-Za-z0-9_]*)'|"([A-Za-z_][A-Za-z0-9_]*)")\s*\]""")
_ASSIGNED = linear.compile(r"\s*=[^=]")  # os.environ["X"] = ...: a write, not a read
_MEMBER = linear.compile(r"""(?:'([A-Za-z_][A-Za-z0-9_]*)'|"([A-Za-z_][A-Za-z0-9_]*)")"""
                         r"""\s+(?:not\s+)?in\s+os\.environ\b""")
_ENVS_USE = linear.compile(r"envs\.([A-Z][A-Z0-9_]+)\b")
_CONST = linear.compile(r"""^([A-Z_][A-Z0-9_]*)[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*"""
                        r"""(?:'([A-Za-z_][A-Za-z0-9_]*)'|"([A-Za-z_][A-Za-z0-9_]*)")[ \t]*$""",
                    linear.M)
_CAST_BEFORE = linear.compile(r"\b(int|float|bool)\(\s*$")


@dataclass(frozen=True)
class Helper:
    """A function that reads the env var named by its first parameter."""

    name: str
    default_param: str | None  # the parameter carrying the default, if any
    default: object  # that parameter's own default when literal, else None
    type: str | None  # from the helper's name: bool / int / float


@dataclass(frozen=True)
class EnvRead:
    """One place that reads an env var."""

    name: str
    module: str  # path relative to the sglang package
    line: int
    has_default: bool
    default: object = None
    default_expr: str | None = None  # source text when the default is not a literal
    type: str | None = None
    declared: bool = False  # an `envs.X` use of an environ.py declaration


def _helper_type(name: str) -> str | None:
    low = name.lower()
    return next((t for t in ("bool", "int", "float") if t in low), None)


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a Name/Attribute chain (cheaper than unparse), else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _callee(call: ast.Call, helpers: dict[str, Helper]) -> tuple[bool, Helper | None]:
    """(is an env read, the helper it goes through or None)."""
    fn = _dotted(call.func) or ""
    if fn in _DIRECT:
        return True, None
    helper = helpers.get(fn.rsplit(".", 1)[-1])
    return helper is not None, helper


def _key_node(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    return kw.get("name") or kw.get("key") or kw.get("env_name")


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    args = list(fn.args.posonlyargs) + list(fn.args.args)
    return args[1:] if args and args[0].arg in ("self", "cls") else args


def _param_default(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> object:
    args = list(fn.args.posonlyargs) + list(fn.args.args)
    defaults = fn.args.defaults
    offset = len(args) - len(defaults)
    for i, a in enumerate(args):
        if a.arg == name and i >= offset:
            ok, v = Evaluator().try_value(defaults[i - offset])
            return v if ok else None
    return None


def _param_callees(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names of the functions `fn` calls with its first parameter as first argument."""
    params = _params(fn)
    if not params:
        return set()
    first = params[0].arg
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            key = _key_node(node)
            if isinstance(key, ast.Name) and key.id == first:
                out.add(_dotted(node.func) or "")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) \
                and node.slice.id == first and _dotted(node.value) in _ENVIRON:
            out.add("os.environ.get")
    return out


_Fn = tuple[ast.FunctionDef | ast.AsyncFunctionDef, set[str]]


def _functions(tree: ast.Module) -> list[_Fn]:
    return [(fn, _param_callees(fn)) for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            and "env" in fn.name.lower()]


def _close_helpers(fns: list[_Fn], helpers: dict[str, Helper]) -> dict[str, Helper]:
    """Add to `helpers` every function of `fns` that reads through one (to a fixpoint)."""
    helpers = dict(helpers)
    changed = True
    while changed:
        changed = False
        for fn, callees in fns:
            if fn.name in helpers or not callees:
                continue
            if any(c in _DIRECT or c.rsplit(".", 1)[-1] in helpers for c in callees):
                params = _params(fn)
                dparam = params[1].arg if len(params) > 1 else None
                helpers[fn.name] = Helper(fn.name, dparam,
                                          _param_default(fn, dparam) if dparam else None,
                                          _helper_type(fn.name))
                changed = True
    return helpers


def find_helpers(trees: Iterable[ast.Module]) -> dict[str, Helper]:
    """Functions whose first parameter is the name of the env var they read (to a fixpoint)."""
    return _close_helpers([f for t in trees for f in _functions(t)], {})


def _default_of(call: ast.Call, helper: Helper | None, ev: Evaluator
                ) -> tuple[bool, object, str | None]:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    node = call.args[1] if len(call.args) > 1 else kw.get("default")
    if node is None and helper is not None and helper.default_param:
        node = kw.get(helper.default_param)
    if node is None:
        if helper is not None and helper.default_param:
            return True, helper.default, None
        return False, None, None
    ok, v = ev.try_value(node)
    return (True, v, None) if ok else (True, None, text(node))


def read_of_call(call: ast.Call, rel: str, line: int, helpers: dict[str, Helper],
                 ev: Evaluator, cast: str | None = None) -> EnvRead | None:
    """The env read `call` makes, or None (not a read, or a name known only at run time)."""
    is_read, helper = _callee(call, helpers)
    if not is_read:
        return None
    ok, name = ev.try_value(_key_node(call))
    if not (ok and isinstance(name, str) and _NAME.match(name)):
        return None
    has, default, expr = _default_of(call, helper, ev)
    return EnvRead(name, rel, line, has, default, expr,
                   helper.type if helper is not None and helper.type else cast)


def _call_end(src: str, open_at: int) -> int | None:
    """Index of the `)` closing the `(` at `open_at` (strings and comments skipped)."""
    depth, i, n = 0, open_at, len(src)
    while i < n:
        ch = src[i]
        if ch in "\"'":
            quote = src[i:i + 3] if src[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            while i < n and not src.startswith(quote, i):
                i += 2 if src[i] == "\\" else 1
            i += len(quote)
            continue
        if ch == "#":
            nl = src.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _callee_names(helpers: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({"getenv", "environ.get", *helpers}))


def _call_sites(src: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start of the name, index of its `(`) of every call to one of `names` (str.find is
    an order of magnitude faster than one regex alternation over a 5000-module wheel)."""
    out = []
    for name in names:
        at = src.find(name)
        while at >= 0:
            after = at + len(name)
            if at == 0 or not (src[at - 1].isalnum() or src[at - 1] == "_"):
                j = after
                while j < len(src) and src[j] in " \t":
                    j += 1
                if j < len(src) and src[j] == "(":
                    out.append((at, j))
            at = src.find(name, after)
    return sorted(out)


_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


def _callee_start(src: str, at: int) -> int:
    """Start of the dotted name that ends the callee found at `at` (`os.` of `os.getenv`)."""
    i = at
    while i > 0 and src[i - 1] in _IDENT_CHARS:
        i -= 1
    return i


class _Lines:
    """1-based line of an offset, by bisection over the line starts."""

    def __init__(self, src: str) -> None:
        self.starts = [0] + [i + 1 for i, c in enumerate(src) if c == "\n"]

    def of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def reads_in_text(src: str, rel: str, helpers: dict[str, Helper],
                  names: tuple[str, ...] | None = None) -> Iterator[EnvRead]:
    """Every env read in one module's text."""
    ev = Evaluator({m.group(1): m.group(2) or m.group(3) for m in _CONST.finditer(src)})
    lines = _Lines(src)
    for at, paren in _call_sites(src, names or _callee_names(helpers)):
        start = _callee_start(src, at)
        if src[max(0, start - 4):start] == "def ":
            continue
        end = _call_end(src, paren)
        if end is None:
            continue
        node = parse_expression(src[start:end + 1])
        if not isinstance(node, ast.Call):
            continue
        cast = _CAST_BEFORE.search(src[max(0, start - 8):start])
        read = read_of_call(node, rel, lines.of(start), helpers, ev,
                            _CASTS[cast.group(1)] if cast else None)
        if read is not None:
            yield read
    for rx, hint in ((_SUBSCRIPT, "os.environ["), (_MEMBER, "in os.environ")):
        for m in rx.finditer(src) if hint in src else ():
            if rx is _SUBSCRIPT and _ASSIGNED.match(src[m.end():m.end() + 64]):
                continue
            yield EnvRead(m.group(1) or m.group(2), rel, lines.of(m.start()), False)
    for m in _ENVS_USE.finditer(src) if "envs." in src else ():
        if m.start() == 0 or not (src[m.start() - 1].isalnum() or src[m.start() - 1] in "_."):
            yield EnvRead(m.group(1), rel, lines.of(m.start()), False, declared=True)


_ENV_DEF = linear.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w*[Ee][Nn][Vv]\w*)[ \t]*\(",
                      linear.M)


def _function_source(src: str, start: int, indent: str) -> str:
    """The text of the `def` at `start`: up to the next line indented no deeper than it."""
    out: list[str] = []
    for i, line in enumerate(src[start:].splitlines()):
        stripped = line.strip()
        if i and stripped and not stripped.startswith("#") and not line.startswith(indent + " ") \
                and not line.startswith(indent + "\t") and not stripped.startswith(")"):
            break
        out.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
    return "\n".join(out)


def _env_functions(texts: dict[str, str]) -> list[_Fn]:
    """Every function whose name says "env", parsed from its own text only."""
    fns: list[_Fn] = []
    for src in texts.values():
        for m in _ENV_DEF.finditer(src):
            tree = parse_module(_function_source(src, m.start(), m.group(1)))
            if tree is None:
                continue
            fns.extend(_functions(tree))
    return fns


def _helper_modules(texts: dict[str, str]) -> dict[str, Helper]:
    """Helpers: functions named "...env..." that read the env var their first parameter
    names, directly or through another helper (to a fixpoint)."""
    return _close_helpers(_env_functions(texts), {})


_HINT = linear.compile(r"getenv|environ|_env|env_")


def all_reads(tree: SourceTree) -> list[EnvRead]:
    """Every env read in the package, module by module (sorted by module and line)."""
    texts = {rel: src for rel in tree.names()
             if (src := tree.read(rel)) is not None and "env" in src and _HINT.search(src)}
    helpers = _helper_modules(texts)
    names = _callee_names(helpers)
    reads: list[EnvRead] = []
    for rel, src in texts.items():
        reads.extend(sorted(reads_in_text(src, rel, helpers, names),
                            key=lambda r: (r.line, r.name)))
    return reads
