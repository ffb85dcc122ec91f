"""Every key an operator meets, from the registries themselves: the analysis rules (RULES),
doctor's checks (doctor/keys.py) and the log signatures (the catalog's generated table)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from pdforensics.explain.rule_actions import ACTIONS, NEED_EVIDENCE

#: where each kind of key is documented (docs/<page>, each key with an anchor of its own)
DOC_PAGES = {"rule": "rules.md", "doctor check": "doctor.md", "log signature": "logs.md"}


@dataclass(frozen=True)
class Explanation:
    key: str
    kind: str  # rule | doctor check | log signature
    meaning: str
    evidence: str  # what it needs to be judged
    action: str  # what to do when it fires
    docs: str  # docs/<page>#<anchor>

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def anchor(key: str) -> str:
    """The key's anchor in its docs page (`explain-decode_prealloc_stuck`)."""
    return "explain-" + key.lower().replace(".", "-")


def _doc(kind: str, key: str) -> str:
    return f"docs/{DOC_PAGES[kind]}#{anchor(key)}"


def _rules() -> list[Explanation]:
    import pdforensics.analysis.rules  # noqa: F401  (registers the rules)
    from pdforensics.analysis.findings import RULES

    out = []
    for key, r in RULES.items():
        doc = " ".join((r.fn.__doc__ or r.description).split())
        needs = [NEED_EVIDENCE[n] for n in r.needs]
        if key.startswith("K8S_"):
            needs.append("the pod objects and events (capture --k8s)")
        out.append(Explanation(key, "rule", doc, "; ".join(needs) or "the capture itself",
                               ACTIONS[key], _doc("rule", key)))
    return out


def _doctor() -> list[Explanation]:
    from pdforensics.doctor.keys import all_checks

    return [Explanation(key, "doctor check", what,
                        "a light capture of the host (`pdforensics doctor`, `snapshot --doctor`)",
                        fix, _doc("doctor check", key)) for key, (what, fix) in all_checks().items()]


_ACTION_BY_LABEL = {
    "cause": "Read the first such line in context (its time is where the trouble starts); the "
             "findings on the same server say what it broke.",
    "consequence": "It follows from a cause: look for the cause line before it on this server "
                   "and its PD partner.",
    "noise": "Nothing by itself: it is context (batch statistics feed the queue signatures).",
}


def _signatures() -> list[Explanation]:
    from pdforensics.catalog.log_table import load_shipped_table

    table = load_shipped_table()
    out = []
    for row in [*table["signatures"], *table.get("queue_signatures", [])]:
        key, label = str(row["key"]), str(row.get("label", "cause"))
        shapes = [p.get("template") or p.get("literal") for p in row.get("patterns", [])]
        shapes += [p.get("literal") for p in row.get("external", [])]
        printed = "; ".join(dict.fromkeys(str(s) for s in shapes if s)) or (
            "rising counts of " + ", ".join(row.get("fields", [])))
        out.append(Explanation(
            key, "log signature", f"{label}: {row['description']}",
            f"a server or router log line (journald, a log file, docker or kubectl logs) like: "
            f"{printed[:400]}", _ACTION_BY_LABEL.get(label, _ACTION_BY_LABEL["cause"]),
            _doc("log signature", key)))
    return out


@lru_cache(maxsize=1)
def registry() -> dict[str, Explanation]:
    """Every key, by name (a rule and a signature never share one: the test checks)."""
    out: dict[str, Explanation] = {}
    for e in [*_rules(), *_doctor(), *_signatures()]:
        out.setdefault(e.key, e)
    return out


def lookup(key: str) -> Explanation | None:
    """The key as given, or its case-insensitive match."""
    reg = registry()
    if key in reg:
        return reg[key]
    folded = {k.lower(): v for k, v in reg.items()}
    return folded.get(key.lower())


def near(key: str, n: int = 3) -> list[str]:
    """The closest known keys, for "did you mean"."""
    import difflib

    folded = {k.lower(): k for k in registry()}
    return [folded[k] for k in difflib.get_close_matches(key.lower(), list(folded), n=n, cutoff=0.6)]
