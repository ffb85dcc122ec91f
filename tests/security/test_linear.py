"""No pattern can backtrack (issue 32): every regular expression of the package is compiled by
pdforensics.linear (RE2), and each one, found by walking the package, is fed adversarial text
(long runs of every character its classes admit, near-matches built from its own literals,
100 KB lines) and must stay under a per-KB time bound.

A new pattern cannot be forgotten: importing every module registers every module-level
pattern, and test_no_stray_re fails on a module that imports `re` itself.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pdforensics
from pdforensics import linear

PKG = Path(pdforensics.__file__).resolve().parent
# modules that may import `re`, and why (nothing else may)
ALLOWED_RE = {
    "linear.py": "the engine itself: `re` only for flags, escape and the fallback",
    "terminal.py": "kernel module (imports nothing of the package): single-character classes, one step "
                   "per character under any engine; walked and timed below all the same",
}
MS_PER_KB = 50.0  # RE2: ~0.01 ms/KB, ~3 us per match; a backtracking pattern: seconds per KB here
SMALL, LARGE = 5_000, 100_000
SUPER_LINEAR = 3.0 * LARGE / SMALL  # 20x the text taking 60x the time: not linear (quadratic: ~400x)


def _modules() -> list[str]:
    names = []
    for m in pkgutil.walk_packages(pdforensics.__path__, "pdforensics."):
        if ".lab.standin" in m.name or m.name.endswith("__main__"):
            continue
        names.append(m.name)
    return names


def _load_everything() -> list[Any]:
    for name in _modules():
        importlib.import_module(name)
    patterns = list(linear.compiled_patterns())
    # patterns held by modules that are not linear's (terminal.py): walked too
    for name in _modules():
        mod = importlib.import_module(name)
        patterns += [v for v in vars(mod).values() if isinstance(v, re.Pattern)]
    return patterns


def test_no_stray_re() -> None:
    stray = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("lab/standin/") or rel in ALLOWED_RE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name in ("re", "regex", "sre_compile") for a in node.names):
                stray.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module in ("re", "regex"):
                stray.append(f"{rel}:{node.lineno}")
    assert not stray, f"use pdforensics.linear (docs/linear-regex.md), not re: {stray}"


def test_the_engine_is_re2() -> None:
    assert linear.ENGINE == "re2", "google-re2 is a dependency: without it patterns may backtrack"
    with pytest.raises(re.error):
        linear.compile(r"(?<!x)y")  # a lookaround never ships
    with pytest.raises(re.error):
        linear.compile(r"(a)\1")


# -- adversarial text ------------------------------------------------------------------------
_GENERIC = ["a", "0", " ", "\t", "é"]
_REPRESENTATIVES = list("aZ09_-.:=/\\\"'`<>()[]{},;#@%&*+?|!~$^") + ["\r", "\x00", "\u202e"]


def _literals(pattern: str | bytes) -> list[str]:
    """The literal runs of a pattern (its near-match material), read with Python's parser."""
    src = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
    try:
        import sre_parse  # noqa: PLC0415 - deprecated alias, still the one parser of the stdlib

        tree = sre_parse.parse(src)
    except Exception:
        return []
    runs: list[str] = []

    def walk(items: Any) -> None:
        cur = ""
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                cur += chr(av)
                continue
            if cur:
                runs.append(cur)
                cur = ""
            if name in ("SUBPATTERN",):
                walk(av[-1])
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                walk(av[2])
            elif name == "BRANCH":
                for b in av[1]:
                    walk(b)
        if cur:
            runs.append(cur)

    walk(tree)
    return sorted({r for r in runs if r.strip()}, key=len, reverse=True)[:6]


def _inputs(pattern: str | bytes, size: int) -> list[tuple[str, str]]:
    """(shape, text) pairs of about `size` characters."""
    lits = _literals(pattern)
    src = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
    chars = _GENERIC + [c for c in _REPRESENTATIVES if c in src and c not in _GENERIC]
    out = [(f"run of {c!r}", c * size) for c in chars]
    out += [(f"run of {a!r}{b!r}", (a + b) * (size // 2)) for a, b in ("a ", "0.", "a=", "-a", "a:", "\"a", "a\n")]
    for lit in lits:
        out.append((f"{lit[:20]!r} repeated", (lit * (size // len(lit) + 1))[:size]))
        out.append((f"{lit[:20]!r} + run", lit + "a" * size))
        out.append((f"{lit[:20]!r} + spaces + run", lit + " " * (size // 2) + "9" * (size // 2)))
        out.append((f"run + {lit[:20]!r}", "x" * size + lit))
    if len(lits) > 1:  # every literal in turn, with runs between: the pattern almost matches
        for sep, label in (("  ", "two spaces"), (" ", "one space"), ("", "nothing")):
            chain = sep.join(lits) + sep + " "
            out.append((f"literals chained by {label}, repeated", (chain * (size // len(chain) + 1))[:size]))
        out.append(("literals chained, runs between", "".join(lit + "a" * (size // (2 * len(lits))) for lit in lits)))
    return out


def _time(p: Any, text: str | bytes, runs: int = 1) -> float:
    """CPU seconds (this thread's: other processes' load does not count) of a full scan, best of runs."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.thread_time()
        for _m in p.finditer(text):
            pass
        p.match(text)
        best = min(best, time.thread_time() - t0)
    return best


def _as(p: Any, text: str) -> str | bytes:
    return text.encode("utf-8", "surrogateescape") if isinstance(p.pattern, bytes) else text


def _slow(p: Any) -> str | None:
    """Why p is not linear on adversarial text, or None: every shape at 5 KB, then the three
    worst again as 100 KB lines; over the per-KB bound, or 20x the text taking 60x the time."""
    small = sorted(((_time(p, _as(p, text)), shape, text) for shape, text in _inputs(p.pattern, SMALL)),
                   reverse=True)
    large = dict(_inputs(p.pattern, LARGE))
    for _t, shape, text in small[:3]:
        t10 = _time(p, _as(p, text), runs=3)
        t100 = _time(p, _as(p, large[shape]), runs=2)
        per_kb = t100 * 1000 / (LARGE / 1000)
        if per_kb > MS_PER_KB or (t100 > 0.2 and t100 > SUPER_LINEAR * t10):
            return (f"{p.pattern!r:.120} on {shape}: {per_kb:.2f} ms/KB at 100 KB, "
                    f"{t100 / max(t10, 1e-6):.0f}x the 5 KB time")
    return None


def test_every_pattern_is_linear_on_adversarial_text() -> None:
    patterns = _load_everything()
    assert len(patterns) > 250  # the walk found the package's patterns
    slow = [why for p in patterns if (why := _slow(p)) is not None]
    assert not slow, "\n".join(slow)


def test_the_walk_sees_a_new_pattern() -> None:
    """A pattern a module compiles at import is in the walk (what makes the test above complete)."""
    p = linear.compile(r"pdforensics-test-(\d{1,9})")
    assert any(q is p for q in linear.compiled_patterns())


def test_a_backtracking_pattern_would_fail_the_bound() -> None:
    """The check can fail: Python's re on the issue's shape of pattern (a lazy run before an
    anchored tail, on short texts so that it ends) is caught as super-linear."""
    global SMALL, LARGE
    p = re.compile(r"^\s*(.*?)\s*x$")
    saved = SMALL, LARGE
    SMALL, LARGE = 100, 2_000
    try:
        assert _slow(p) is not None
    finally:
        SMALL, LARGE = saved


def _answer(m: Any) -> Any:
    if m is None:
        return None
    n = m.re.groups
    names = sorted(m.re.groupindex)
    return (m.span(), m.groups(), m.groups(""), m.lastgroup, m.lastindex, m.group(), m[0],
            m.group(*range(n + 1)), m.groupdict(), m.groupdict("-"),
            [m.group(name) for name in names], [(m.start(i), m.end(i)) for i in range(n + 1)],
            [m.span(i) for i in range(n + 1)], m.string, m.pos, m.endpos)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80),
                min_size=1, max_size=8))
def test_the_direct_ascii_step_answers_as_the_wrapper(texts: list[str]) -> None:
    """match / search / fullmatch / findall / finditer of ASCII text skip google-re2's wrapper (linear._fast_calls):
    every pattern of the package answers as the wrapper does, on random ASCII and on each
    pattern's own source (which tends to match it)."""
    assert linear.ENGINE != "re2" or linear._FAST is not None  # the direct step is in use
    _load_everything()
    patterns = linear.compiled_patterns()
    assert len(patterns) > 300
    for p in patterns:
        inner = getattr(p, "_p", None)
        if inner is None:  # a bytes pattern: the wrapper only
            continue
        source = p.pattern if p.pattern.isascii() else ""
        for t in (*texts, source, source[::2]):
            for fast, slow in ((p.search, inner.search), (p.match, inner.match),
                               (p.fullmatch, inner.fullmatch)):
                assert _answer(fast(t)) == _answer(slow(t)), (p.pattern, t)
            assert p.findall(t) == inner.findall(t), (p.pattern, t)
            assert [_answer(m) for m in p.finditer(t)] == [_answer(m) for m in inner.finditer(t)]
