"""Env vars read anywhere in the source: each way of reading, helpers found by what they do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.catalog.build import build_from_tree
from pdforensics.catalog.env_reads import all_reads, reads_in_text
from pdforensics.catalog.source import SourceTree

UTILS = '''
import os

def get_bool_env_var(name: str, default: str = "false") -> bool:
    value = os.getenv(name, default)
    return value.lower() in ("true", "1")

def get_int_env_var(name: str, default: int = 0) -> int:
    value = os.getenv(name)
    return int(value) if value else default

def _env_seconds(key, fallback=7.5):
    return float(get_int_env_var(key, fallback))

def apply(layer, x):  # reads os.environ but is no helper: its name does not say env
    return os.environ.get(layer)
'''
CONN = '''
import os
from sglang.srt.utils import get_bool_env_var, get_int_env_var
from sglang.srt.environ import envs
TIMEOUT_NAME = "SGLANG_X_TIMEOUT"

class Manager:
    def __init__(self):
        self.bootstrap = get_int_env_var(
            "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", 300
        )
        self.interval = max(float(os.getenv("SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", 5.0)), 2.0)
        self.fast = get_bool_env_var("SGLANG_FAST")
        self.path = os.environ["SGLANG_REQUIRED_PATH"]
        self.named = os.environ.get(TIMEOUT_NAME, "30")
        self.dyn = os.getenv(f"SGLANG_{self.role}_X")
        self.secs = _env_seconds("SGLANG_SECONDS")
        self.waiting = envs.SGLANG_DISAGGREGATION_WAITING_TIMEOUT.get()
        self.odd = os.getenv("SGLANG_ODD", compute())
        layer = apply("NOT_AN_ENV", 1)
        if "SGLANG_FLAG" in os.environ:
            os.environ["SGLANG_WRITTEN"] = "1"
'''
ENVIRON = '''
class Envs:
    SGLANG_DISAGGREGATION_WAITING_TIMEOUT = EnvInt(300)
'''
SERVER_ARGS = "class ServerArgs:\n    port: int = 1\n"


def tree() -> SourceTree:
    return SourceTree.from_texts({"srt/server_args.py": SERVER_ARGS, "srt/utils.py": UTILS,
                                  "srt/disaggregation/conn.py": CONN, "srt/environ.py": ENVIRON,
                                  "srt/other.py": "from x import envs\nenvs.NOT_DECLARED\n"})


def test_each_way_of_reading() -> None:
    reads = {r.name: r for r in all_reads(tree())}
    assert reads["SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"].default == 300
    assert reads["SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"].type == "int"
    assert reads["SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"].line == 9
    hb = reads["SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL"]
    assert (hb.default, hb.type) == (5.0, "float")
    assert reads["SGLANG_FAST"].default == "false"  # the helper's own default
    assert not reads["SGLANG_REQUIRED_PATH"].has_default
    assert reads["SGLANG_X_TIMEOUT"].default == "30"  # name through a module constant
    assert reads["SGLANG_SECONDS"].default == 7.5  # a helper of a helper
    assert reads["SGLANG_ODD"].default_expr == "compute()"
    assert reads["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"].declared
    assert "SGLANG_FLAG" in reads
    assert not {"NOT_AN_ENV", "SGLANG_WRITTEN"} & set(reads)
    assert not any(n.startswith("SGLANG_{") for n in reads)


def test_catalog_joins_declared_and_read() -> None:
    cat = build_from_tree(tree())
    waiting = cat.env("SGLANG_DISAGGREGATION_WAITING_TIMEOUT")
    assert waiting is not None and waiting.declared and waiting.default == 300
    assert waiting.read_by == ("srt/disaggregation/conn.py",)
    boot = cat.env("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT")
    assert boot is not None and not boot.declared
    assert boot.origin == "srt/disaggregation/conn.py:9" and boot.type == "int"
    assert cat.env("NOT_DECLARED") is None  # an `envs.X` of something else is no read


def test_readers_that_disagree() -> None:
    t = SourceTree.from_texts({
        "srt/server_args.py": SERVER_ARGS,
        "srt/a.py": 'import os\nos.getenv("SGLANG_T", "1")\n',
        "srt/b.py": 'import os\nos.getenv("SGLANG_T", "2")\n'})
    env = build_from_tree(t).env("SGLANG_T")
    assert env is not None and env.default is None
    assert env.default_expr == 'varies: "1" (srt/a.py:2); "2" (srt/b.py:2)'
    assert env.read_by == ("srt/a.py", "srt/b.py")


FRAGMENTS = ["os.getenv(", "os.environ.get(", "os.environ[", "get_int_env_var(", "envs.", "'X'",
             '"SGLANG_A"', "'''", '"""', "#", "\\", "(", ")", "[", "]", ",", " in os.environ",
             "\n", "def _env_x(name, d=1):\n    return os.getenv(name, d)\n", "f'{a}'", "int(",
             "SGLANG_B", " = ", "1", "None"]


@pytest.mark.property
@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)))
def test_never_crashes_on_arbitrary_text(src: str) -> None:
    reads = list(reads_in_text(src, "m.py", {}))
    assert all(r.module == "m.py" and r.line >= 1 for r in reads)
    all_reads(SourceTree.from_texts({"m.py": src, "n.py": src}))
