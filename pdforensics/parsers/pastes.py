"""What a paste wraps around evidence, line by line: Markdown's quote marks (``> `` opening
every line of a comment that quotes a log) and an editor's or ``cat -n``'s line numbers
(``16433 [2026-07-23 ...] Scheduler hit an exception``). Both are removed before any
reader sees the text; a text that is neither is returned as it is.

A stack pasted as a bare list of py-spy frames (no ``Thread`` header, no indentation, native
symbols between, ``...`` where frames were left out, a title line such as ``TP0 stuck
forever in:`` before each list) is given back as py-spy text: one thread per list, named by
its title (its state left empty: not shown), the lists separated as processes."""

from __future__ import annotations

from pdforensics import linear


def markdown_quoted(text: str) -> bool:
    """Every non-empty line of the first 200 opens with ``>`` (a paste quoted in Markdown;
    curl -v's ``> GET`` comes with ``<`` and ``*`` lines, so never all of them)."""
    head = [ln for ln in text[:100_000].split("\n", 200)[:200] if ln.strip()]
    return len(head) >= 2 and all(ln.lstrip()[:1] == ">" for ln in head)


def unquote_markdown(text: str) -> str:
    """The text without the Markdown quote mark opening each line; a scrape's ``# HELP`` and
    ``# TYPE`` lines get back the ``#`` a quote loses when it is copied as rendered (``> # x``
    is a heading there)."""
    out = []
    for ln in text.split("\n"):
        q = ln.lstrip()
        out.append(q[2:] if q[:2] == "> " else q[1:] if q[:1] == ">" else ln)
    if any(_BARE_TYPE.match(q) for q in out):  # a scrape (its TYPE lines say so)
        out = [f"# {q}" if _BARE_TYPE.match(q) or _BARE_HELP.match(q) else q for q in out]
    return "\n".join(out)


#: a Prometheus metadata line without its "#": "TYPE name counter", "HELP name text"
_BARE_TYPE = linear.compile(r"^TYPE [a-zA-Z_:][\w:]{0,200} (?:counter|gauge|histogram|summary|"
                            r"untyped)\s*$")
_BARE_HELP = linear.compile(r"^HELP [a-zA-Z_:][\w:]{0,200} ")


_NUMBERED = linear.compile(r"^ {0,8}(\d{1,9})(?: |\t|$)")


def line_numbered(text: str) -> bool:
    """A paste from an editor or ``cat -n`` (each line opened by its number, the numbers
    rising): nine in ten of the first 50 non-empty lines are numbered so."""
    head = [ln for ln in text[:100_000].split("\n", 60)[:60] if ln.strip()][:50]
    nums = [int(m.group(1)) for ln in head if (m := _NUMBERED.match(ln)) is not None]
    return len(head) >= 3 and len(nums) * 10 >= len(head) * 9 and \
        all(a < b for a, b in zip(nums, nums[1:], strict=False)) and nums[-1] - nums[0] < 10 * len(nums)


def strip_line_numbers(text: str) -> str:
    """The text without the line number opening each line (and the one space after it)."""
    out = []
    for ln in text.split("\n"):
        m = _NUMBERED.match(ln)
        out.append(ln[m.end():] if m is not None else ln)
    return "\n".join(out)


#: a py-spy frame line at any indentation: ``func (file.py:12)`` or ``func (libcuda.so.1)``
_FRAME = linear.compile(r"^\s{0,12}[\w.<>~:-]{1,300} \([^()\n]{1,400}(?:\.py:\d{1,7}|\.so[\w.]{0,40})\)\s*$")
#: a native symbol without a location (``at::native::nonzero_cuda``), or an elision mark
_SYMBOL = linear.compile(r"^\s{0,12}(?:[\w~]{1,100}::[\w:<>,~ ]{1,300}|\.\.\.|…)\s*$")
_TITLE_MAX = 200


def frame_list(text: str) -> bool:
    """A stack pasted as a bare list of frames: its first non-empty lines are frames (py-spy's
    ``func (file.py:N)``, native symbols, ``...``) or short titles ending in ``:``, three in
    four of them frames with a location, the first frame within the first two lines, and no
    ``Thread``/``Process`` header of py-spy's (a dump with headers is read as it is)."""
    head = [ln for ln in text[:20_000].split("\n", 80)[:80] if ln.strip()][:40]
    if len(head) < 4 or any(ln.startswith(("Thread ", "Process ")) for ln in head):
        return False
    located = sum(1 for ln in head if _FRAME.match(ln) is not None)
    symbols = sum(1 for ln in head if _SYMBOL.match(ln) is not None)
    titles = [ln for ln in head if _FRAME.match(ln) is None and _SYMBOL.match(ln) is None]
    return located >= 3 and (located + symbols) * 4 >= len(head) * 3 and \
        all(ln.rstrip().endswith(":") and len(ln) <= _TITLE_MAX for ln in titles) and \
        any(_FRAME.match(ln) is not None for ln in head[:2])


def frames_as_pyspy(text: str) -> str:
    """py-spy text for a bare frame list: each title (or the start) opens a thread named by
    it, in a process of its own; elision marks are dropped."""
    out: list[str] = []
    title: str | None = None
    opened = False
    for ln in text.split("\n"):
        s = ln.strip()
        if not s or s in ("...", "…"):
            continue
        if _FRAME.match(ln) is None and _SYMBOL.match(ln) is None:
            title, opened = s.rstrip(":").strip().replace('"', "'"), False
            continue
        if not opened:
            if out:
                out.append("-" * 20)
            out.append(f'Thread (): "{title or "pasted stack"}"')  # (the state was not pasted)
            opened = True
        out.append("    " + s)
    return "\n".join(out) + "\n"


def unwrap_paste(text: str) -> str:
    """The text without Markdown quote marks or line numbers, when every line carries them; a
    bare frame list as py-spy text."""
    if markdown_quoted(text):
        text = unquote_markdown(text)
    elif line_numbered(text):
        text = strip_line_numbers(text)
    return frames_as_pyspy(text) if frame_list(text) else text
