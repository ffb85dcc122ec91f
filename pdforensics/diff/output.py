"""DiffResult -> JSON, terminal text, and the report's "Changes since baseline" rows."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pdforensics.diff.compare import Change, DiffResult


def diff_json(d: DiffResult) -> dict[str, Any]:
    """`{"a", "b", "changes": [{"scope", "kind", "key", "before", "after", "relevance"...}]}`."""
    return {"a": d.a, "b": d.b, "a_taken_at": _iso(d.a_taken_at), "b_taken_at": _iso(d.b_taken_at),
            "changes": [c.to_dict() for c in d.changes], "notes": list(d.notes),
            "catalog_version": d.catalog_version, "unchanged_hosts": list(d.unchanged_hosts)}


def changes_for_report(d: DiffResult) -> list[dict[str, Any]]:
    """The `changes` list the report renders."""
    return [c.to_dict() for c in d.changes]


def _iso(t: float | None) -> str | None:
    if not t:
        return None
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def show_value(value: Any) -> str:
    """A before/after value for a terminal: absent, switch, multi-line."""
    if value is None:
        return "(absent)"
    if value is True:
        return "(set)"
    text = str(value)
    return text if len(text) <= 160 else text[:157] + "..."


def format_change(c: Change, indent: str = "  ") -> list[str]:
    """One change as terminal lines: headline, then default/help/note."""
    if c.change == "changed":
        what = f"{show_value(c.before)} -> {show_value(c.after)}"
    elif c.change == "added":
        what = f"added: {show_value(c.after)}"
    else:
        what = f"removed (was {show_value(c.before)})"
    if "\n" in what:
        lines = [f"{indent}[{c.relevance}] {c.kind} {c.key} ({c.change}):"]
        if c.before is not None:
            lines += [f"{indent}    - {x}" for x in str(c.before).splitlines()]
        if c.after is not None:
            lines += [f"{indent}    + {x}" for x in str(c.after).splitlines()]
    else:
        lines = [f"{indent}[{c.relevance}] {c.kind} {c.key}: {what}"]
    extra = []
    if c.default is not None:
        extra.append(f"default {c.default!r}")
    if c.note:
        extra.append(c.note)
    if extra:
        lines.append(f"{indent}    {'; '.join(extra)}")
    if c.help:
        lines.append(f"{indent}    {c.help[:200]}")
    return lines


def format_diff_text(d: DiffResult) -> str:
    """Changes grouped by scope, most relevant scope first."""
    out = [f"A: {d.a} ({_iso(d.a_taken_at) or '?'})", f"B: {d.b} ({_iso(d.b_taken_at) or '?'})"]
    if not d.changes:
        out.append("no configuration changes")
    else:
        out.append(f"{len(d.changes)} change(s), most relevant first")
        scopes: list[str] = []
        for c in d.changes:
            if c.scope not in scopes:
                scopes.append(c.scope)
        for scope in scopes:
            out.append("")
            out.append(scope)
            for c in d.changes:
                if c.scope == scope:
                    out.extend(format_change(c))
    if d.notes:
        out.append("")
        out.extend(f"note: {n}" for n in d.notes)
    return "\n".join(out) + "\n"
