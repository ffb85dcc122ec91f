"""Log and exception messages in sglang's source, read by AST (sglang is never imported).

A message is what one call prints: ``logger.error(f"...")``, ``raise X("...")``, or the
reason string handed to ``record_failure`` / ``prepare_abort`` / ``KVTransferError``.
f-string fields, ``%s`` and ``{}`` placeholders become holes; the literal parts stay.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.catalog.source import SourceTree, parse_module

_ESCAPED_SPACES = linear.compile(r"(?:\\ )+")

#: Source files read: disaggregation, scheduler and tokenizer managers, the HTTP server
#: (health checks), the mini load balancer (the Python router) and the watchdog utilities.
READ_PREFIXES = ("srt/disaggregation/", "srt/managers/", "srt/entrypoints/http_server.py",
                 "srt/utils.py", "srt/utils/")
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception",
                          "critical", "fatal", "warning_once", "info_once",
                          "error_once", "debug_once"})
_LOGGER_NAMES = frozenset({"logger", "logging", "log", "_logger", "LOGGER"})
#: Calls whose message argument ends up in a log line or an error a log line quotes.
_REASON_SINKS = frozenset({"record_failure", "prepare_abort", "set_finish_with_abort",
                           "KVTransferError", "abort_request", "_abort_on_failure"})
_REASON_KEYWORDS = frozenset({"failure_reason", "error_message", "message", "msg", "reason"})
_PRINTF = linear.compile(r"%(?:\([^)]*\))?[-+ #0]*\d*(?:\.\d+)?[sdrifgexX%]")
_BRACES = linear.compile(r"\{[^{}]*\}")
#: The least literal text a message needs to be a usable pattern.
MIN_LITERAL = 10

Part = str | None  # a literal piece, or None for a hole


@dataclass(frozen=True)
class Message:
    """One message: where it is, what prints it, and its literal pieces with holes."""

    rel: str
    line: int
    sink: str  # "logger.error", "raise KVTransferError", "record_failure", ...
    parts: tuple[Part, ...]
    scope: str = ""  # the function that prints it: "CommonKVSender.poll", "event_loop", ""
    consequence: str | None = None  # why the code path makes it a consequence, if it does

    @property
    def template(self) -> str:
        """The message with ``{}`` for every hole."""
        return "".join("{}" if p is None else p for p in self.parts)



def _split_printf(text: str) -> list[Part]:
    out: list[Part] = []
    pos = 0
    for m in _PRINTF.finditer(text):
        out.append(text[pos:m.start()])
        out.append("%" if m.group() == "%%" else None)
        pos = m.end()
    out.append(text[pos:])
    return out


def _split_braces(text: str) -> list[Part]:
    out: list[Part] = []
    pos = 0
    for m in _BRACES.finditer(text):
        out.append(text[pos:m.start()])
        out.append(None)
        pos = m.end()
    out.append(text[pos:])
    return out


class _Flattener:
    """Turns a message expression into parts, resolving names assigned in the same function."""

    def __init__(self, assigned: dict[str, ast.expr]) -> None:
        self.assigned = assigned
        self.depth = 0

    def parts(self, node: ast.expr) -> list[Part]:
        self.depth += 1
        try:
            if self.depth > 20:
                return [None]
            return self._parts(node)
        finally:
            self.depth -= 1

    def _parts(self, node: ast.expr) -> list[Part]:
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else [None]
        if isinstance(node, ast.JoinedStr):
            out: list[Part] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.append(v.value)
                else:
                    out.append(None)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.parts(node.left) + self.parts(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) \
                and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return _split_printf(node.left.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "format" and isinstance(node.func.value, ast.Constant) \
                and isinstance(node.func.value.value, str):
            return _split_braces(node.func.value.value)
        if isinstance(node, ast.Name) and node.id in self.assigned:
            return self.parts(self.assigned[node.id])
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            # `reason or "fallback text"`: the fallback is what prints when there is no reason
            for value in reversed(node.values):
                got = self.parts(value)
                if any(p is not None for p in got):
                    return got
        return [None]


def _normalise(parts: list[Part], printf: bool) -> tuple[Part, ...]:
    """Merge neighbouring literals and holes; split %-placeholders of logger-style calls."""
    out: list[Part] = []
    for p in parts:
        pieces = _split_printf(p) if (printf and p is not None) else [p]
        for q in pieces:
            if q == "":
                continue
            if q is None and out and out[-1] is None:
                continue
            if q is not None and out and out[-1] is not None:
                out[-1] = str(out[-1]) + q
                continue
            out.append(q)
    return tuple(out)


def _first_assignments(func: ast.AST) -> dict[str, ast.expr]:
    """name -> the expression of its first plain assignment inside `func`."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, node.value)
    return found


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _logger_method(call: ast.Call) -> str | None:
    f = call.func
    if not isinstance(f, ast.Attribute) or f.attr not in _LOG_METHODS:
        return None
    owner = f.value
    if isinstance(owner, ast.Name) and owner.id in _LOGGER_NAMES:
        return f.attr
    if isinstance(owner, ast.Attribute) and owner.attr in _LOGGER_NAMES:
        return f.attr
    return None


def _message_arg(call: ast.Call) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg in _REASON_KEYWORDS:
            return kw.value
    return call.args[0] if call.args else None


def _string_arg(call: ast.Call) -> ast.expr | None:
    """The first literal / f-string argument, else the message keyword or first argument."""
    strs = [a for a in call.args if isinstance(a, ast.Constant | ast.JoinedStr) or (
        isinstance(a, ast.BoolOp) and any(isinstance(v, ast.Constant | ast.JoinedStr)
                                          for v in a.values))]
    return strs[0] if strs else _message_arg(call)


#: calls that abort a request: a message handed to them reports the abort, never its cause
_ABORT_SINKS = frozenset({"prepare_abort", "set_finish_with_abort", "abort_request",
                          "_abort_on_failure"})


def _consequence(node: ast.AST, sink: str, scope: str) -> str | None:
    """Why the code path that prints a message makes it a consequence, or None."""
    name = sink.split()[-1].split(".")[-1]
    if name in _ABORT_SINKS:
        return f"handed to {name}: the abort path"
    fn = scope.rsplit(".", 1)[-1]
    if fn == "abort" or fn.endswith("_abort") or fn.startswith("abort_"):
        return f"printed in {scope}: the abort path"
    call = node.exc if isinstance(node, ast.Raise) else node
    if isinstance(call, ast.Call) and any(k.arg == "is_from_another_rank" for k in call.keywords):
        return "KVTransferError(is_from_another_rank=...): this rank recorded no failure of its own"
    return None


def _messages_in(scope: ast.AST, rel: str, fl: _Flattener, where: str = "") -> Iterator[Message]:
    for node in ast.walk(scope):
        sink: str | None = None
        arg: ast.expr | None = None
        printf = False
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            name = _call_name(node.exc.func)
            if name is None:
                continue
            sink, arg = f"raise {name}", _string_arg(node.exc)
        elif isinstance(node, ast.Call):
            method = _logger_method(node)
            name = _call_name(node.func)
            if method is not None:
                sink, arg, printf = f"logger.{method}", node.args[0] if node.args else None, True
            elif name in _REASON_SINKS:
                sink, arg = name, _string_arg(node)
        if sink is None or arg is None:
            continue
        parts = _normalise(fl.parts(arg), printf)
        if any(p is not None for p in parts):
            yield Message(rel, getattr(node, "lineno", 0), sink, parts, where,
                          _consequence(node, sink, where))


def extract_messages(src: str, rel: str) -> list[Message]:
    """Every message printed or raised in one module's source; [] when it does not parse."""
    tree = parse_module(src)
    if tree is None:
        return []
    found: dict[tuple[int, str], Message] = {}
    names = _scope_names(tree)
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    # innermost function wins: walk outer scopes first, inner ones overwrite
    for scope in [tree, *funcs]:
        fl = _Flattener(_first_assignments(scope) if scope is not tree else {})
        for m in _messages_in(scope, rel, fl, names.get(id(scope), "")):
            found[(m.line, m.sink)] = m
    return [found[k] for k in sorted(found)]


def _scope_names(tree: ast.AST) -> dict[int, str]:
    """id(function node) -> "Class.func" (the class that defines it, when one does)."""
    out: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                out[id(child)] = f"{prefix}.{child.name}" if prefix else child.name
                visit(child, prefix)
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def read_messages(tree: SourceTree) -> list[Message]:
    """Messages of every module under READ_PREFIXES in `tree`, in path order."""
    out: list[Message] = []
    for rel in tree.names():
        if not rel.startswith(READ_PREFIXES):
            continue
        src = tree.read(rel)
        if src is not None:
            out.extend(extract_messages(src, rel))
    return out


def message_pattern(parts: tuple[Part, ...]) -> tuple[str, str] | None:
    """(regex, prefilter) for one printed line of the message: literal pieces, holes as
    ``.*?``; the prefilter is its longest literal piece in lower case.

    A multi-line message gives the line with the most literal text. None when too little
    literal text is left to tell the message from others.
    """
    lines: list[list[Part]] = [[]]
    for p in parts:
        if p is None:
            lines[-1].append(None)
            continue
        chunks = p.split("\n")
        for i, chunk in enumerate(chunks):
            if i:
                lines.append([])
            if chunk:
                lines[-1].append(chunk)
    best = max(lines, key=lambda ln: sum(len(str(p).strip()) for p in ln if p is not None))
    while best and (best[0] is None or not str(best[0]).strip()):
        best = best[1:]
    # trailing holes and punctuation go: a pasted line is often cut right there
    while best and (best[-1] is None or len(str(best[-1]).strip()) < 3):
        best = best[:-1]
    if sum(len(str(p).strip()) for p in best if p is not None) < MIN_LITERAL:
        return None
    texts = [None if p is None else (p.strip() if i in (0, len(best) - 1) else p)
             for i, p in enumerate(best)]
    # runs of spaces match any whitespace run: pasted logs often widen or narrow them
    regex = "".join(".*?" if t is None else _ESCAPED_SPACES.sub(r"\\s+", linear.escape(t))
                    for t in texts)
    literal = max((t for t in texts if t is not None), key=len).strip().lower()
    return regex, literal
