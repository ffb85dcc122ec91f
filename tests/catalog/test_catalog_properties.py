"""The builder never crashes on arbitrary source text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.catalog.build import build_from_tree
from pdforensics.catalog.model import Catalog
from pdforensics.catalog.source import SourceTree

FRAGMENTS = [
    "class Envs:\n", "class S(msgspec.Struct):\n", "    ", "X = EnvInt(", "EnvBool(", "Env(",
    "x: A[int, ", "Arg(help=", "choices=", "Literal[", "Optional[", "List[str]", "'a'", '"b"',
    "1", "2 ** 99999", "-", "+", "*", "(", ")", "[", "]", "{", "}", ",", "=", ":", "\n",
    "parser.add_argument(", "'--x'", "default=ServerArgs.x", "_declared_default('x')",
    "Gauge(", "Counter(", "Histogram(", "name=", "documentation=", "labelnames=", "f'{a}'",
    "*args", "**kw", "lambda: 1", "None", "True", "1 << 200", "[1] * 10", "'a' * 9",
    "field(default_factory=list)", "labels.keys()", "# comment\n", "class A:\n  pass\n",
]
source_text = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
)


@settings(max_examples=2000, deadline=None)
@given(server_args=source_text, environ=source_text, metrics=source_text, fields=source_text)
def test_build_never_crashes(server_args: str, environ: str, metrics: str, fields: str) -> None:
    tree = SourceTree.from_texts({
        "srt/server_args.py": server_args,
        "srt/environ.py": environ,
        "srt/observability/metrics_collector.py": metrics,
        "srt/arg_groups/fields/x.py": fields,
    })
    cat = build_from_tree(tree)
    assert Catalog.from_json(cat.to_json()) == cat
