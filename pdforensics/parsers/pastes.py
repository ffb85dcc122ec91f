"""What a paste wraps around evidence, line by line: Markdown's quote marks (``> `` opening
every line of a comment that quotes a log) and an editor's or ``cat -n``'s line numbers
(``16433 [2026-07-23 ...] Scheduler hit an exception``). Both are removed before any
reader sees the text; a text that is neither is returned as it is."""

from __future__ import annotations

from pdforensics import linear


def markdown_quoted(text: str) -> bool:
    """Every non-empty line of the first 200 opens with ``>`` (a paste quoted in Markdown;
    curl -v's ``> GET`` comes with ``<`` and ``*`` lines, so never all of them)."""
    head = [ln for ln in text[:100_000].split("\n", 200)[:200] if ln.strip()]
    return len(head) >= 2 and all(ln.lstrip()[:1] == ">" for ln in head)


def unquote_markdown(text: str) -> str:
    """The text without the Markdown quote mark opening each line."""
    out = []
    for ln in text.split("\n"):
        q = ln.lstrip()
        out.append(q[2:] if q[:2] == "> " else q[1:] if q[:1] == ">" else ln)
    return "\n".join(out)


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


def unwrap_paste(text: str) -> str:
    """The text without Markdown quote marks or line numbers, when every line carries them."""
    if markdown_quoted(text):
        return unquote_markdown(text)
    if line_numbered(text):
        return strip_line_numbers(text)
    return text
