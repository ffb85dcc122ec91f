"""Settings a tool prints (``name: value``, ``Name (--flag=N) : 600``, a table's
``| name | value |`` row): a word in a setting's name is not an event the line reports."""

from __future__ import annotations


def _table_setting(low: str, word: str) -> bool:
    cells = [c.strip() for c in low.strip().strip("|").split("|")]
    value = " ".join(cells[1:])
    return (len(cells) >= 2 and word in cells[0] and word not in value
            and 1 <= len(value.split()) <= 2)


def in_setting_name(low: str, word: str) -> bool:
    """``word`` is only in the name of a ``name: value`` / ``name = value`` setting the line
    states (a benchmark's "Warmup iter (--warmup_iter=N) : 112"), not an event it reports
    (a setting's value is a word or two; a progress bar's "Loading ...: 25% Completed | 1/4"
    is not one, nor a header that ends in its colon: "Exception in ModelTpServer:")."""
    if low.lstrip()[:1] == "|":
        return _table_setting(low, word)
    if not low.lstrip()[:1].isalpha():
        return False
    cut, depth = -1, 0  # the first ":" or "=" outside parentheses ("(--warmup_iter=N)")
    for i, ch in enumerate(low[:61]):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch in ":=" and depth == 0:
            cut = i
            break
    if cut <= 0:
        return False
    value = low[cut + 1:]
    return word in low[:cut] and word not in value and 1 <= len(value.split()) <= 2
