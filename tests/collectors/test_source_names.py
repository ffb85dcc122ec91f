"""A source is named only by its declaration and by the code that reads its evidence (parsers,
feeds, views, rules, report): everywhere else a reading is picked by the declaration
(``NVIDIA_SMI.name``, ``Source.absent``, ``Source.config``), never by a string that a rename
would silently leave behind."""

from __future__ import annotations

import ast
from pathlib import Path

import pdforensics
from pdforensics.collectors import REGISTRY

PACKAGE = Path(pdforensics.__file__).parent
#: the wings that read evidence by its source's name, as the recipe in docs/architecture.md says
READERS = ("collectors", "parsers", "views", "analysis", "report", "lab")
#: still named outside a reader, and why (this test fails once one is gone: drop it here then)
KNOWN: dict[tuple[str, str], str] = {}


def _is_source(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "source") or (
        isinstance(node, ast.Name) and node.id == "source")


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _strings(elt)]
    return []


def source_names_in(tree: ast.AST) -> set[str]:
    """Registered names a module picks readings by: ``x.source == "name"`` (or ``in (...)``),
    ``x.source.startswith("name")``, ``bundle.find(host, "name")``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(map(_is_source, [node.left, *node.comparators])):
            for side in (node.left, *node.comparators):
                found.update(_strings(side))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "startswith" and _is_source(node.func.value) and node.args:
                prefixes = _strings(node.args[0])
                found.update(n for n in REGISTRY for p in prefixes if n.startswith(p))
            elif node.func.attr == "find" and len(node.args) == 2:
                found.update(_strings(node.args[1]))
    return found & set(REGISTRY)


def test_no_source_is_picked_by_name_outside_its_readers() -> None:
    named = {(str(p.relative_to(PACKAGE)), name)
             for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in READERS
             for name in source_names_in(ast.parse(p.read_text(), str(p)))}
    assert named - KNOWN.keys() == set(), "pick these readings by the Source's declaration"
    assert KNOWN.keys() - named == set(), "no longer named there: drop it from KNOWN"


def test_the_scan_sees_each_way_of_naming() -> None:
    code = ('a = [e for e in r if e.source == "ps"]\nb = e.source.startswith("nvidia_smi")\n'
            'c = bundle.find(h, "pip_freeze")\nd = source in ("cmdline", "not-a-source")\n'
            'e = bundle.find(h, PIP_FREEZE.name)\n')
    assert source_names_in(ast.parse(code)) == {
        "ps", "pip_freeze", "cmdline", *(n for n in REGISTRY if n.startswith("nvidia_smi"))}
