"""The package's shape stays readable: no import circle, no module over 500 lines, no
function over 80. Run alone: `pytest tests/test_code_shape.py`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pdforensics"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for the package's own code (the lab's stand-in sglang excluded:
    it imitates another project's layout)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if "standin" in path.parts:
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _runtime_imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """Modules of the package that `name` imports at run time (TYPE_CHECKING blocks skipped)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
                   for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in known else base
                if target in known:
                    yield target


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative enough
    for a package this size)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    known = _modules()
    modules = {m: set(_runtime_imports(m, p, known)) - {m} for m, p in known.items()}
    packages: dict[str, set[str]] = {}
    for m, targets in modules.items():
        for t in targets:
            a, b = ".".join(m.split(".")[:2]), ".".join(t.split(".")[:2])
            if a != b:
                packages.setdefault(a, set()).add(b)
    return modules, packages


def test_no_import_circle_between_modules_or_subpackages() -> None:
    modules, packages = _graphs()
    assert _cycles(modules) == []
    assert _cycles(packages) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_modules_and_functions_stay_small() -> None:
    too_long = []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"module {name}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    too_long.append(f"function {name}.{node.name} (line {node.lineno}): {size} lines")
    assert too_long == []
