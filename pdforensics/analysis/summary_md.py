"""A short Markdown summary of an analysis, to paste into a ticket or a chat.

Verdict, the top findings with a few lines of evidence, their next steps, what the
analysis lacked, and the bundle's name. Text that came from a host (titles, evidence, the
summary, names) goes inside code spans, which Markdown renders literally: no link, no
HTML, no emphasis. Our own prose (next steps, which may quote a frame) is backslash-escaped.
Neither may break a line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pdforensics import linear
from pdforensics.analysis.findings import Analysis, Finding

_BACKTICKS = linear.compile(r"`+")

if TYPE_CHECKING:
    from pdforensics.views.loaded import LoadedCapture

#: the characters that start markup inside a line: emphasis, code, links, images, HTML,
#: entities, tables, strikethrough (a line of ours never starts with host text)
_PUNCT = linear.compile(r"([\\`*_\[\]<>&!|~])")
_CONTROLS = linear.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
#: bidi embeddings, overrides and isolates, zero-width and invisible marks: pasted into GitHub
#: they reorder or hide text, so each is shown as its code point (`<U+202E>`)
_INVISIBLE = linear.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u00ad]")
#: what would open a block at the start of a line: a heading, a list item, a rule
_BLOCK_START = linear.compile(r"^(\d*)([#+\-=])|^(\d+)([.)])")
#: what starts a GFM autolink: a scheme or www, and the @ of an e-mail address
_AUTOLINK = linear.compile(r"(?i)(w)(w\.)|(htt)(ps?:)|(ft)(p:)|(mailt)(o:)|()(@)")
ZWSP = "\u200b"


def _visible(m: linear.Match[str]) -> str:
    return f"<U+{ord(m.group()):04X}>"


def _break_link(m: linear.Match[str]) -> str:
    i = m.lastindex or 2
    return (m.group(i - 1) or "") + ZWSP + m.group(i)


def _block(m: linear.Match[str]) -> str:
    return f"{m.group(1)}\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"


@dataclass(frozen=True)
class BundleFacts:
    """What the summary says about the bundle itself."""

    name: str
    cluster: str | None = None
    started_at: float | None = None
    status: str | None = None  # complete | partial
    report: str | None = None  # where report.html is


def one_line(text: object, limit: int = 400) -> str:
    """Controls and line breaks as one space; long text cut with an ellipsis."""
    s = _INVISIBLE.sub(_visible, _CONTROLS.sub(" ", str(text))).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def code(text: object, limit: int = 400) -> str:
    """An inline code span that holds `text` literally, whatever backticks it contains."""
    s = one_line(text, limit)
    if not s:
        return "` `"
    fence = "`" * (max((len(r) for r in _BACKTICKS.findall(s)), default=0) + 1)
    pad = " " if s[0] == "`" or s[-1] == "`" or (s[0] == " " and s[-1] == " ") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def escape(text: object, limit: int = 600) -> str:
    """Plain Markdown text: every character that starts inline markup backslash-escaped (no
    emphasis, no link, no HTML, no entity), and a zero-width space inside what would start an autolink (`www.`,
    `http:`, `ftp:`, `mailto:`, an e-mail's `@`), so GFM's autolinker sees no link."""
    s = _PUNCT.sub(r"\\\1", _AUTOLINK.sub(_break_link, one_line(text, limit)))
    return _BLOCK_START.sub(_block, s)  # never a heading, list or rule at a line's start


def _finding(i: int, f: Finding, evidence: int) -> list[str]:
    merged = f" (merged: {', '.join(code(k) for k in f.merged)})" if f.merged else ""
    lines = [f"{i}. **{f.severity}** {code(f.key)}{merged}: {code(f.title)}"]
    for e in f.evidence[:evidence]:
        lines.append(f"   - {code(e, 300)}")
    if len(f.evidence) > evidence:
        lines.append(f"   - … {len(f.evidence) - evidence} more in the report")
    if f.next_step:
        lines.append(f"   - **Next:** {escape(f.next_step)}")
    return lines


def markdown_summary(a: Analysis, facts: BundleFacts, top: int = 3, evidence: int = 3) -> str:
    """The Markdown text (ends with a newline)."""
    where = f" on {code(facts.cluster)}" if facts.cluster else ""
    out = [f"### pdforensics: **{a.verdict}**{where}", ""]
    when = (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(facts.started_at))
            if facts.started_at else None)
    out.append(f"- bundle: {code(facts.name)}"
               + (f", captured {when}" if when else "")
               + (f", capture {escape(facts.status)}" if facts.status else ""))
    out.append(f"- summary: {code(a.summary, 600)}")
    out.append("")
    if a.diagnosis is not None:
        from pdforensics.analysis.pdpath.render import diagnosis_markdown

        out.extend(diagnosis_markdown(a.diagnosis, code, escape))
        out.append("")
    if a.findings:
        out.append("**Top findings**")
        out.append("")
        for i, f in enumerate(a.findings[:top], 1):
            out.extend(_finding(i, f, evidence))
        rest = a.findings[top:]
        if rest:
            counts = {s: sum(1 for f in rest if f.severity == s) for s in ("critical", "warning", "info")}
            words = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
            out.append("")
            out.append(f"{len(rest)} more finding{'s' if len(rest) != 1 else ''} ({words}): "
                       f"{', '.join(code(k) for k in dict.fromkeys(f.key for f in rest))}.")
    else:
        out.append("No findings: no rule saw anything wrong in the evidence collected.")
    if a.missing:
        out.append("")
        out.append("**Evidence the analysis lacked**")
        out.append("")
        out.extend(f"- {code(m, 300)}" for m in a.missing[:5])
        if len(a.missing) > 5:
            out.append(f"- … {len(a.missing) - 5} more")
    out.append("")
    tail = f"Full report: {code(facts.report)}; " if facts.report else ""
    out.append(f"{tail}re-run offline: {code('pdforensics analyze ' + facts.name)}")
    return "\n".join(out) + "\n"


def facts_of(capture: LoadedCapture, report: Path | None = None) -> BundleFacts:
    """The bundle facts of a loaded capture (report.html's path when it is there)."""
    path = Path(capture.path)
    if report is None and (path / "report.html").is_file():
        report = path / "report.html"
    return BundleFacts(name=path.name, cluster=capture.cluster, started_at=capture.started_at,
                       status=capture.status, report=str(report) if report else None)


def write_markdown(target: str, analysis: Analysis, bundle: Path, report: Path | None) -> None:
    """`capture --markdown FILE`: the summary of a finished bundle to FILE (`-`: stdout)."""
    import click

    from pdforensics.views.loaded import load_capture

    text = markdown_summary(analysis, facts_of(load_capture(bundle), report))
    if target == "-":
        click.echo(text, nl=False)
    else:
        write_private_text(target, text)


def write_private_text(path: str, text: str) -> None:
    """text to path, owner-only (0600) whatever the umask, an existing file included: host text."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
