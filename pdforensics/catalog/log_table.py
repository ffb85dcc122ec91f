"""The log signature table: generated from sglang wheels of several releases, shipped as JSON.

`build_table` reads each release's messages (`log_messages`), keeps those `log_spec` selects,
and records per pattern which releases print it and where. `load_shipped_table` reads the
shipped copy that the log scanner uses.
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pdforensics import linear
from pdforensics.catalog.log_messages import READ_PREFIXES, message_pattern, read_messages
from pdforensics.catalog.log_spec import QUEUE_DESCRIPTIONS, QUEUE_FIELDS, SPECS
from pdforensics.catalog.source import SourceTree, open_source, parse_module

#: The releases the shipped table is built from: three eras of PD disaggregation.
TABLE_VERSIONS = ("0.4.6", "0.4.10", "0.5.9", "0.5.23")
SHIPPED = Path(__file__).resolve().parent / "data" / "log_signatures.json"
_QUEUE_FIELD_RE = linear.compile(r"(#[a-z][a-z-]*-req):")
_BATCH_HEAD = linear.compile(r"^(Prefill|Decode) batch")
_SELECTORS = [(s, linear.compile(s.select, linear.I)) for s in SPECS if s.select]


def _version_of(tree: SourceTree) -> str:
    from pdforensics.catalog.build import _version

    return _version(tree)


def queue_fields(tree: SourceTree) -> dict[str, list[str]]:
    """The `#x-req` counts each role's batch line prints: {"prefill": [...], "decode": [...]}."""
    found: dict[str, set[str]] = {"prefill": set(), "decode": set()}
    for rel in tree.names():
        if not rel.startswith("srt/managers/"):
            continue
        src = tree.read(rel)
        if src is None or " batch" not in src:
            continue
        module = parse_module(src)
        if module is None:
            continue
        for func in ast.walk(module):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            texts = [n.value for n in ast.walk(func)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            role = next((m.group(1).lower() for t in texts if (m := _BATCH_HEAD.match(t))), None)
            if role is not None:
                for t in texts:
                    found[role].update(_QUEUE_FIELD_RE.findall(t))
    return {role: sorted(fields) for role, fields in found.items()}


def _selected(tree: SourceTree) -> dict[str, dict[str, dict[str, Any]]]:
    """key -> regex -> {template, literal, where} for one release."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for msg in read_messages(tree):
        for spec, sel in _SELECTORS:
            if not msg.rel.startswith(spec.paths) or not sel.search(msg.template):
                continue
            pat = message_pattern(msg.parts)
            if pat is None:
                continue
            regex, literal = pat
            row = out.setdefault(spec.key, {}).setdefault(
                regex, {"template": msg.template.split("\n")[0][:300], "literal": literal,
                        "where": [], "roles": set(), "consequence": set()})
            row["where"].append(f"{msg.rel}:{msg.line} {msg.sink}"
                                + (f" in {msg.scope}" if msg.scope else ""))
            role = role_of_code(msg.rel, msg.scope)
            if role is not None:
                row["roles"].add(role)
            if msg.consequence:
                row["consequence"].add(msg.consequence)
    return out


def role_of_code(rel: str, scope: str) -> str | None:
    """The PD role the code that prints a message runs in: the KV sender, the bootstrap
    server and prefill.py are prefill's; the KV receiver and decode*.py are decode's."""
    cls = scope.split(".")[0] if "." in scope else ""
    if any(w in cls for w in ("Sender", "Prefill", "BootstrapServer")):
        return "prefill"
    if any(w in cls for w in ("Receiver", "Decode")):
        return "decode"
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith("srt/disaggregation/") and name.startswith(("prefill", "decode")):
        return "prefill" if name.startswith("prefill") else "decode"
    return None


def build_table(trees: list[SourceTree]) -> dict[str, Any]:
    """The table (a JSON-ready dict) from the source trees of one or more sglang releases."""
    versions: dict[str, Any] = {}
    per_key: dict[str, dict[str, dict[str, Any]]] = {}
    for tree in trees:
        v = _version_of(tree)
        msgs = read_messages(tree)
        versions[v] = {"source": tree.description, "messages_read": len(msgs),
                       "files_read": sum(1 for n in tree.names() if n.startswith(READ_PREFIXES)),
                       "queue_fields": queue_fields(tree)}
        for key, rows in _selected(tree).items():
            for regex, row in rows.items():
                merged = per_key.setdefault(key, {}).setdefault(
                    regex, {"regex": regex, "literal": row["literal"],
                            "template": row["template"], "versions": [], "where": {},
                            "roles": [], "consequence": []})
                merged["versions"].append(v)
                merged["where"][v] = row["where"]
                merged["roles"] = sorted(set(merged["roles"]) | row["roles"])
                merged["consequence"] = sorted(set(merged["consequence"]) | row["consequence"])
    signatures = []
    for spec in SPECS:
        patterns = sorted(per_key.get(spec.key, {}).values(), key=lambda r: r["regex"])
        label, why = source_label(spec.label, patterns)
        signatures.append({
            "key": spec.key, "label": label, "label_why": why, "description": spec.description,
            "masks_causes": spec.masks_causes,
            "patterns": patterns,
            "external": [{"regex": r, "literal": lit, "printed_by": who}
                         for r, lit, who in spec.external],
        })
    return {
        "generator": "pdforensics catalog log-signatures (pdforensics.catalog.log_table)",
        "versions": versions,
        "signatures": signatures,
        "queue_signatures": [{"key": k, "label": "cause", "description": d,
                              "fields": sorted(f for f, kk in QUEUE_FIELDS.items() if kk == k)}
                             for k, d in QUEUE_DESCRIPTIONS.items()],
    }


def source_label(spec_label: str, patterns: list[dict[str, Any]]) -> tuple[str, str]:
    """The label the source gives a key: every pattern printed on a consequence path (the
    abort path, a KVTransferError raised for another rank's failure) makes it a consequence,
    whatever log_spec says; else log_spec's label. The second item says why."""
    reasons = [r["consequence"] for r in patterns]
    if patterns and all(reasons):
        return "consequence", "sglang's source: " + "; ".join(sorted({x for r in reasons for x in r}))
    return spec_label, "log_spec.py" if not patterns else "log_spec.py (the source does not decide)"


def build_table_from_paths(paths: list[Path]) -> dict[str, Any]:
    """build_table over wheels / source trees on disk (each opened, read, closed)."""
    trees = [open_source(Path(p)) for p in paths]
    try:
        return build_table(trees)
    finally:
        for t in trees:
            t.close()


def table_json(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def load_shipped_table() -> dict[str, Any]:
    """The shipped table (read once)."""
    data: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    return data


def cli_log_signatures(sources: list[str], out: str | None) -> Path:
    """`pdforensics catalog log-signatures [--from WHEEL]... [-o OUT]`: build and write.

    Without --from, the wheels of TABLE_VERSIONS are downloaded (never installed) into the
    cache. OUT defaults to ./log_signatures.json.
    """
    from pdforensics.catalog.fetch import fetch_wheel
    from pdforensics.errors import PdforensicsError

    paths = [Path(s).expanduser() for s in sources] or [fetch_wheel(v) for v in TABLE_VERSIONS]
    target = Path(out) if out else Path.cwd() / "log_signatures.json"
    text = table_json(build_table_from_paths(paths))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PdforensicsError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target
