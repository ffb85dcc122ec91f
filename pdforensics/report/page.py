"""Jinja2 environment (autoescape everywhere) and the page context of one report."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from pdforensics import __version__
from pdforensics.analysis.findings import Analysis
from pdforensics.diff.compare import Change
from pdforensics.report.changes import Baseline, build_changes
from pdforensics.report.collection import build_collection
from pdforensics.report.common import SECTIONS, Section, guarded, utc
from pdforensics.report.config_section import build_config
from pdforensics.report.gpus import build_gpus
from pdforensics.report.metrics import build_metrics
from pdforensics.report.requests import build_requests
from pdforensics.report.stacks import build_stacks
from pdforensics.report.timeline import build_timeline
from pdforensics.report.topology import build_topology
from pdforensics.report.verdict import build_verdict
from pdforensics.views.loaded import LoadedCapture

TEMPLATES = "pdforensics.templates"
PAGE = "report.html.j2"


def _load(name: str) -> str | None:
    try:
        return resources.files(TEMPLATES).joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return None


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """Templates come from the installed package (works from a wheel); autoescape is on for
    every template, whatever its name, and an undefined name is an error, not blank text."""
    return jinja2.Environment(loader=jinja2.FunctionLoader(_load), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True)


def warm() -> None:
    """Compile the page and its macros now (about 0.15 s), so a capture that calls this while it
    waits on its hosts spends only the rendering after its last result."""
    env = environment()
    for name in (PAGE, "macros.j2"):
        env.get_template(name)
    _assets()


@dataclass(frozen=True)
class Asset:
    """Our own inline CSS or JS, and the CSP source that allows exactly it."""

    text: Markup
    csp: str


def _asset(name: str) -> Asset:
    text = _load(name)
    if text is None:
        raise FileNotFoundError(f"{TEMPLATES}/{name} is missing from the installation")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return Asset(Markup(text), f"'sha256-{digest}'")


@lru_cache(maxsize=1)
def _assets() -> tuple[Asset, Asset]:
    return _asset("report.css"), _asset("report.js")


def _history(capture: LoadedCapture) -> Any:
    """Charts of the Prometheus history `capture --prometheus` stored (see pdforensics.watch)."""
    from pdforensics.report.history_chart import build_history

    return build_history(capture)


def context(capture: LoadedCapture, analysis: Analysis | None = None,
            changes: Sequence[Change] | None = None, baseline: Baseline | None = None,
            raw_prefix: str = "", analysis_note: str | None = None,
            change_notes: Sequence[str] = ()) -> dict[str, Any]:
    """Everything the template needs; each section is built under its own guard."""
    titles = dict(SECTIONS)
    note = analysis_note or "no analysis was available for this bundle"
    p = raw_prefix
    builders = {
        "verdict": lambda: build_verdict(capture, analysis, note, p),
        "topology": lambda: build_topology(capture),
        "timeline": lambda: build_timeline(capture, changes, baseline, p),
        "changes": lambda: build_changes(changes, baseline, change_notes),
        "metrics": lambda: build_metrics(capture),
        "requests": lambda: build_requests(capture, p),
        "history": lambda: _history(capture),
        "gpus": lambda: build_gpus(capture),
        "stacks": lambda: build_stacks(capture),
        "config": lambda: build_config(capture),
        "collection": lambda: build_collection(capture, p),
    }
    sections: dict[str, Section] = {sid: guarded(sid, titles[sid], fn) for sid, fn in builders.items()}
    css, js = _assets()
    v = sections["verdict"].data
    return {
        "s": sections, "order": [sid for sid, _t in SECTIONS], "css": css.text,
        "css_hash": css.csp, "js": js.text, "js_hash": js.csp,
        "verdict": v.verdict if v is not None else "UNKNOWN", "cluster": capture.cluster,
        "captured": utc(capture.started_at), "tool_version": __version__,
        "bundle_name": capture.path.name,
        "flagged": [sid for sid, sec in sections.items() if sec.missing or sec.failed],
    }


def render(capture: LoadedCapture, analysis: Analysis | None = None,
           changes: Sequence[Change] | None = None, baseline: Baseline | None = None,
           raw_prefix: str = "", analysis_note: str | None = None,
           change_notes: Sequence[str] = ()) -> str:
    """The report page as one self-contained HTML string.

    ``changes``: the diff's Change objects against a baseline, or None when no baseline is
    configured (the page says so). ``raw_prefix``: how the page reaches the bundle's files
    ("" when the page sits in the bundle).
    """
    ctx = context(capture, analysis, changes, baseline, raw_prefix, analysis_note, change_notes)
    return environment().get_template(PAGE).render(ctx)
