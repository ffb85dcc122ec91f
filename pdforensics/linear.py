"""Regular expressions whose time is linear in the text: every pattern that reads host, client
or bundle text is compiled here, never by `re` directly.

Python's `re` backtracks. `(.*?)\\s*$` on a 40 KB frame line, six chained `.*?` on a 1.5 KB log
line, or a token shape that needs a `.` after a long run take seconds to minutes, and hold the
GIL while they do, so a capture's deadline thread stops with them. `compile()` builds the
pattern on RE2 (google-re2), which matches in time linear in the text whatever the pattern.

The syntax is RE2's, the common part of RE2 and `re`: no lookaround (`(?=`, `(?!`, `(?<=`,
`(?<!`), no backreference (`\\1`), no possessive or atomic group, `\\z` rather than `\\Z`.
`\\d`, `\\w`, `\\s` and `\\b` are ASCII; `$` without MULTILINE matches only at the very end (use
`\\n?$` or strip the line). Bytes patterns match bytes (Latin-1: `\\xff` is the byte 0xff,
`.` any byte); str patterns match code points. Flags: IGNORECASE, MULTILINE, DOTALL.
docs/linear-regex.md is the guide to writing one; tests/security/test_linear.py walks the
package and feeds every pattern compiled here adversarial text, timed per KB.

Without google-re2 (a platform it has no wheel for), the same pattern is compiled by `re`:
everything still works, without the guarantee (`ENGINE` says which).
"""

from __future__ import annotations

import re
import threading
from typing import Any, AnyStr, cast

try:  # google-re2: a declared dependency; its absence is a degraded mode, not an error
    import re2 as _re2  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - exercised only where the wheel is missing
    _re2 = None

ENGINE = "re2" if _re2 is not None else "re"
I = IGNORECASE = re.IGNORECASE  # noqa: E741 - re's own short names
M = MULTILINE = re.MULTILINE
S = DOTALL = re.DOTALL
_SUPPORTED = IGNORECASE | MULTILINE | DOTALL
Match = re.Match
Pattern = re.Pattern
error = re.error

# every pattern compiled here, by (source, flags): the linearity test walks it
_COMPILED: dict[tuple[str | bytes, int], Any] = {}
_LOCK = threading.Lock()
_MAX_CACHED = 4096  # patterns built at run time from data (rare) stop being remembered


def compile(pattern: AnyStr, flags: int = 0, remember: bool = True) -> re.Pattern[AnyStr]:  # noqa: A001
    """The pattern on RE2 (linear time); typed as `re.Pattern`, whose API it shares.

    A pattern RE2 cannot compile (lookaround, backreference) raises `error` at import time,
    so a pattern that could backtrack never ships. `remember=False`: a pattern built from
    data (an alternation of literal values) is neither cached nor listed for the test."""
    key = (pattern, flags)
    if not remember:
        return cast("re.Pattern[AnyStr]", _build(pattern, flags))
    done = _COMPILED.get(key)
    if done is not None:
        return cast("re.Pattern[AnyStr]", done)
    if flags & ~_SUPPORTED:
        raise error(f"linear.compile: unsupported flags {flags:#x} (only I, M, S): {pattern!r}")
    compiled = _build(pattern, flags)
    with _LOCK:
        if len(_COMPILED) < _MAX_CACHED:
            _COMPILED[key] = compiled
    return cast("re.Pattern[AnyStr]", compiled)


def _build(pattern: str | bytes, flags: int) -> Any:
    if _re2 is None:
        return re.compile(pattern, flags)
    inline = "".join(c for f, c in ((IGNORECASE, "i"), (MULTILINE, "m"), (DOTALL, "s")) if flags & f)
    options = _re2.Options()
    options.log_errors = False
    if isinstance(pattern, bytes):
        options.encoding = _re2.Options.Encoding.LATIN1
        source: str | bytes = (b"(?%s)" % inline.encode() if inline else b"") + pattern
    else:
        source = (f"(?{inline})" if inline else "") + pattern
    try:
        compiled = _re2.compile(source, options)
    except _re2.error as exc:
        raise error(f"linear.compile: not an RE2 pattern ({exc}): {pattern!r}") from None
    return _StrPattern(compiled) if isinstance(pattern, str) else compiled


def _encodable(text: Any) -> Any:
    """str text RE2 can take: a lone surrogate (host bytes decoded with surrogateescape) becomes
    `?`, one code point for one, so every position and span stays the same."""
    if type(text) is str and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _fast_calls() -> tuple[Any, Any, Any, Any] | None:
    """google-re2's own match step, for ASCII text: (RE2.Match's anchors: unanchored, start,
    both; the Match class). Its Python wrapper converts every offset between characters and
    UTF-8 bytes (5 us a call, 30x `re`); on ASCII text they are the same, so the step can be
    called directly (1 us). None when this version of google-re2 lacks any of it: then every
    call takes the wrapper."""
    try:
        a = _re2._Anchor
        anchors = (a.UNANCHORED, a.ANCHOR_START, a.ANCHOR_BOTH)
        probe = _re2.compile(r"b(c)?", _re2.Options())
        spans = probe._regexp.Match(anchors[0], b"abc", 0, 3)
        m = _re2._Match(probe, "abc", 0, 3, spans)
        if (m.span(), m.group(1), m.groups()) != ((1, 3), "c", ("c",)):
            return None
        return (*anchors, _re2._Match)
    except Exception:  # noqa: BLE001 - any change in the library's internals: the wrapper
        return None


_FAST = _fast_calls() if _re2 is not None else None
_NO_SPAN = (-1, -1)


class _StrPattern:
    """An RE2 pattern over str whose text may hold lone surrogates (re accepts them, RE2's
    UTF-8 encoder does not). match / search / fullmatch / finditer / findall of ASCII text
    call RE2's match step directly (`_fast_calls`): same answer, a fifth of the time."""

    __slots__ = ("_names", "_n", "_p", "_rx")

    def __init__(self, p: Any) -> None:
        self._p = p
        self._rx: Any = p._regexp if _FAST is not None else None
        self._n: int = p.groups  # asked once: the wrapper asks RE2 on every group access
        self._names: dict[str, int] = p.groupindex

    def _direct(self, anchor: Any, text: Any) -> Any:
        data = text.encode("ascii")
        spans = self._rx.Match(anchor, data, 0, len(data))
        if spans[0] == _NO_SPAN:
            return None
        return _AsciiMatch(self, text, spans)

    def search(self, text: Any, *a: Any) -> Any:
        if self._rx is not None and not a and type(text) is str and text.isascii():
            return self._direct(_FAST[0], text)  # type: ignore[index]
        return self._p.search(_encodable(text), *a)

    def match(self, text: Any, *a: Any) -> Any:
        if self._rx is not None and not a and type(text) is str and text.isascii():
            return self._direct(_FAST[1], text)  # type: ignore[index]
        return self._p.match(_encodable(text), *a)

    def fullmatch(self, text: Any, *a: Any) -> Any:
        if self._rx is not None and not a and type(text) is str and text.isascii():
            return self._direct(_FAST[2], text)  # type: ignore[index]
        return self._p.fullmatch(_encodable(text), *a)

    def _each(self, text: str) -> Any:
        """Every match of ASCII text, as the wrapper's finditer steps (an empty match moves
        one on)."""
        data = text.encode("ascii")
        pos, end, anchor = 0, len(data), _FAST[0]  # type: ignore[index]
        while True:
            spans = self._rx.Match(anchor, data, pos, end)
            if spans[0] == _NO_SPAN:
                return
            yield _AsciiMatch(self, text, spans)
            if pos == end:
                return
            pos = pos + 1 if pos == spans[0][1] else spans[0][1]

    def finditer(self, text: Any, *a: Any) -> Any:
        if self._rx is not None and not a and type(text) is str and text.isascii():
            return self._each(text)
        return self._p.finditer(_encodable(text), *a)

    def findall(self, text: Any, *a: Any) -> Any:
        if self._rx is not None and not a and type(text) is str and text.isascii():
            if not self._n:
                return [m.group() for m in self._each(text)]
            if self._n == 1:
                return [m[1] or "" for m in self._each(text)]
            return [m.groups(default="") for m in self._each(text)]
        return self._p.findall(_encodable(text), *a)

    def split(self, text: Any, *a: Any) -> Any:
        return self._p.split(_encodable(text), *a)

    def sub(self, repl: Any, text: Any, *a: Any) -> Any:
        return self._p.sub(repl, _encodable(text), *a)

    def subn(self, repl: Any, text: Any, *a: Any) -> Any:
        return self._p.subn(repl, _encodable(text), *a)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._p, name)


class _AsciiMatch:
    """A match of ASCII text found by the direct step: group, groups, span and the rest read
    the spans RE2 gave (characters and bytes are the same there), without the wrapper's
    offset conversion and group-count call on every access. What it does not define
    (expand, lastindex, lastgroup, re, pos, ...) is the wrapper's own Match's."""

    __slots__ = ("_pat", "_spans", "_text")

    def __init__(self, pat: _StrPattern, text: str, spans: Any) -> None:
        self._pat = pat
        self._text = text
        self._spans = spans

    def _index(self, group: Any) -> int:
        if type(group) is not int:
            try:
                group = self._pat._names[group]
            except (KeyError, TypeError):
                raise IndexError("bad group name") from None
        if not 0 <= group <= self._pat._n:
            raise IndexError("bad group index")
        return cast("int", group)

    def __getitem__(self, group: Any) -> str | None:
        a, b = self._spans[self._index(group)]
        return None if a == -1 else self._text[a:b]

    def group(self, *groups: Any) -> Any:
        if not groups:
            a, b = self._spans[0]
            return self._text[a:b]
        if len(groups) == 1:
            return self[groups[0]]
        return tuple(self[g] for g in groups)

    def groups(self, default: Any = None) -> tuple[Any, ...]:
        t = self._text
        return tuple(default if a == -1 else t[a:b] for a, b in self._spans[1:])

    def groupdict(self, default: Any = None) -> dict[str, Any]:
        got = {name: self[i] for name, i in self._pat._names.items()}
        return {name: default if v is None else v for name, v in got.items()}

    def span(self, group: Any = 0) -> tuple[int, int]:
        return cast("tuple[int, int]", self._spans[self._index(group)])

    def start(self, group: Any = 0) -> int:
        return self.span(group)[0]

    def end(self, group: Any = 0) -> int:
        return self.span(group)[1]

    def __getattr__(self, name: str) -> Any:
        return getattr(_FAST[3](self._pat._p, self._text, 0, len(self._text), self._spans),  # type: ignore[index]
                       name)


class PatternSet:
    """Several str patterns searched at once (RE2::Set): ``matching(text)`` gives the indexes
    of those that match anywhere in it, in one pass over the text instead of one per pattern.
    Without google-re2 each pattern is searched in turn (same answer)."""

    def __init__(self, patterns: list[Any]) -> None:
        self._patterns = list(patterns)
        self._set: Any = None
        if _re2 is not None and self._patterns:
            options = _re2.Options()
            options.log_errors = False
            rs = _re2.Set.SearchSet(options)
            for p in self._patterns:
                rs.Add(p.pattern)  # the source as built: inline flags included
            rs.Compile()
            self._set = rs

    def matching(self, text: str) -> list[int]:
        if self._set is None:
            return [i for i, p in enumerate(self._patterns) if p.search(text)]
        if type(text) is str and text.isascii():  # RE2's own step: no wrapper, no encoder
            return sorted(self._set._set.Match(text.encode("ascii")) or ())
        return sorted(self._set.Match(_encodable(text)) or ())


class LiteralSet:
    """Byte literals searched for at once (RE2::Set over Latin-1): ``matching(data)`` gives the
    indexes of those ``data`` holds, in one pass over it. Without google-re2, one ``in`` each."""

    def __init__(self, literals: list[bytes]) -> None:
        self._literals = list(literals)
        self._set: Any = None
        if _re2 is not None and self._literals:
            options = _re2.Options()
            options.log_errors = False
            options.encoding = _re2.Options.Encoding.LATIN1
            rs = _re2.Set.SearchSet(options)
            for lit in self._literals:
                rs.Add(re.escape(lit))
            rs.Compile()
            self._set = rs

    def matching(self, data: bytes) -> list[int]:
        if self._set is None:
            return [i for i, lit in enumerate(self._literals) if lit in data]
        return sorted(self._set.Match(data) or ())


def matching_lines(pattern: re.Pattern[bytes], data: bytes) -> Any:
    """(start, end) of every line of ``data`` (split on ``\\n``, the end before it) that
    holds a match of the bytes ``pattern``, in order: one search per such line, the rest of
    the line skipped (one scan of a large text instead of a call per line)."""
    rx = getattr(pattern, "_regexp", None) if _FAST is not None else None
    pos, end = 0, len(data)
    while pos <= end:
        if rx is not None:
            start = rx.Match(_FAST[0], data, pos, end)[0][0]  # type: ignore[index]
        else:
            m = pattern.search(data, pos)
            start = -1 if m is None else m.start()
        if start < 0:
            return
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", start)
        if line_end < 0:
            line_end = end
        yield line_start, line_end
        pos = line_end + 1


def union(patterns: list[Any]) -> str:
    """The sources of str patterns as one alternation (compile it here), their named groups
    made plain: one search of the union instead of one per pattern, a cheap test a line can
    skip on."""
    named = re.compile(r"\(\?P<\w+>")
    return "|".join("(?:" + named.sub("(?:", p.pattern) + ")" for p in patterns)


def escape(text: AnyStr) -> AnyStr:
    """`text` as a literal in a pattern (re.escape's output is valid RE2 syntax)."""
    return re.escape(text)


def compiled_patterns() -> list[Any]:
    """Every pattern compiled so far (for the linearity test)."""
    with _LOCK:
        return list(_COMPILED.values())
