"""`pdforensics explain`: every rule, doctor check and log signature key has its entry (the
test walks the registries and the doctor's sources), and the docs index is current."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pdforensics.analysis.rules  # noqa: F401  (registers the rules)
from pdforensics.analysis.findings import RULES
from pdforensics.catalog.log_table import load_shipped_table
from pdforensics.catalog.safeguard_table import SPECS
from pdforensics.cli import main
from pdforensics.doctor.checks_consistency import PD_SETTINGS
from pdforensics.explain.docs import index_block
from pdforensics.explain.registry import DOC_PAGES, anchor, registry
from pdforensics.parsers.journal import SIGNATURES

ROOT = Path(__file__).resolve().parents[2]
DOCTOR = ROOT / "pdforensics" / "doctor"


def doctor_keys_in_source() -> set[str]:
    """Every check key the doctor's code can emit: the first argument of ok/warn/fail/Check
    when it is a literal, the keys of its key tables, and the safeguard keys."""
    keys: set[str] = set()
    for path in DOCTOR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("ok", "warn", "fail", "Check") and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                keys.add(node.args[0].value)
            if (isinstance(node, ast.Tuple) and node.elts and isinstance(node.elts[0], ast.Constant)
                    and isinstance(node.elts[0].value, str)
                    and node.elts[0].value.startswith(("same_", "pd_"))):
                keys.add(node.elts[0].value)
    keys |= {k for k, *_ in PD_SETTINGS}
    keys |= {f"safeguard.{s.key}" for s in SPECS if s.key not in ("log_requests", "log_requests_level")}
    return keys


def test_every_rule_doctor_check_and_signature_is_explained() -> None:
    reg = registry()
    table = load_shipped_table()
    wanted = {("rule", k) for k in RULES}
    wanted |= {("doctor check", k) for k in doctor_keys_in_source()}
    wanted |= {("log signature", s.key) for s in SIGNATURES}
    wanted |= {("log signature", str(q["key"])) for q in table.get("queue_signatures", [])}
    assert len(wanted) > 90
    for kind, key in sorted(wanted):
        e = reg.get(key)
        assert e is not None, f"no explanation of {kind} {key}"
        assert e.kind == kind, (key, e.kind, kind)  # a key means one thing
        assert e.meaning.strip() and e.evidence.strip() and e.action.strip(), e
        assert e.docs == f"docs/{DOC_PAGES[kind]}#{anchor(key)}"
    assert {(e.kind, e.key) for e in reg.values()} == wanted  # nothing stale either


@pytest.mark.parametrize("kind", sorted(DOC_PAGES))
def test_docs_index_is_current_and_every_anchor_resolves(kind: str) -> None:
    text = (ROOT / "docs" / DOC_PAGES[kind]).read_text(encoding="utf-8")
    assert index_block(kind) in text, "run: python -m pdforensics.explain.docs"
    for e in registry().values():
        if e.kind == kind:
            assert f'<a id="{anchor(e.key)}"></a>' in text, e.key


def test_explain_cli_text_json_and_unknown() -> None:
    r = CliRunner().invoke(main, ["explain", "DECODE_PREALLOC_STUCK"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "DECODE_PREALLOC_STUCK (rule)"
    for label in ("meaning:", "evidence:", "do:", "docs:     docs/rules.md#explain-decode_prealloc_stuck"):
        assert label in r.output
    r = CliRunner().invoke(main, ["explain", "kv_waiting_timeout", "--json"])
    doc = json.loads(r.output)
    assert doc["key"] == "KV_WAITING_TIMEOUT" and doc["kind"] == "log signature"
    assert set(doc) == {"key", "kind", "meaning", "evidence", "action", "docs"}
    r = CliRunner().invoke(main, ["explain", "safeguard.pd_waiting_timeout", "--json"])
    assert json.loads(r.output)["kind"] == "doctor check"
    r = CliRunner().invoke(main, ["explain", "pyspy_atach"])
    assert r.exit_code == 1 and "did you mean pyspy_attach" in r.output
    r = CliRunner().invoke(main, ["explain", "--all", "--json"])
    assert len(json.loads(r.output)) == len(registry())
    r = CliRunner().invoke(main, ["explain", "\x1b]52;c;AAAA\x07"])  # a key is text from a user
    assert r.exit_code == 1 and "\x1b" not in r.output
