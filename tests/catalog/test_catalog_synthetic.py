"""A tiny synthetic sglang tree: every declaration style, and the error paths."""

from __future__ import annotations

import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from pdforensics.catalog import build_catalog, cli_build
from pdforensics.catalog.build import build_from_tree
from pdforensics.catalog.model import Catalog
from pdforensics.catalog.source import SourceTree
from pdforensics.errors import PdforensicsError

SERVER_ARGS = '''
import dataclasses
from typing import Literal, Optional, List
from sglang.srt.arg_groups.arg_utils import A, Arg
from sglang.srt.arg_groups.choices import BACKENDS

@dataclasses.dataclass
class ServerArgs:
    port: int = 30000
    mem_fraction_static: Optional[float] = None
    chunk: int = 4 * 1024
    weird: str = compute()

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--port", type=int, default=ServerArgs.port, help="The port.")
        parser.add_argument("--mem-fraction-static", type=float,
                            default=ServerArgs.mem_fraction_static, help="Memory " "fraction.")
        parser.add_argument("--chunk", "-c", type=int, default=ServerArgs.chunk)
        parser.add_argument("--weird", default=ServerArgs.weird, help=f"x {y} z")
        parser.add_argument("--old-flag", action="store_true", help="Deprecated.")
        parser.add_argument("--mode", choices=["a", "b"], default=_declared_default("mode"))
        parser.add_argument(*names, **kwargs)
'''
FIELDS = '''
import msgspec
from typing import Literal, Optional, List
from sglang.srt.arg_groups.arg_utils import A, Arg
from sglang.srt.arg_groups.choices import BACKENDS

class Disagg(msgspec.Struct):
    _NS_PATH = "disagg"
    mode: A[Literal["null", "prefill", "decode"], "PD role."] = "null"
    backend: A[str, Arg(help="Transfer backend.", choices=BACKENDS)] = "mooncake"
    tp_size: A[int, Arg(help="TP size.", aliases=["--tensor-parallel-size"])] = 1
    hidden: A[bool, Arg(no_cli=True)] = False
    enable_x: A[bool, "Enable x."] = False
    urls: A[List[str], "URLs."] = msgspec.field(default_factory=list)
    model_path: A[str, Arg(help="Model.", cli_name="--model")]
    plain: int = 3
'''
CHOICES = 'BACKENDS = ["mooncake", "nixl"] + ["fake"]\n'
ENVIRON = '''
class Envs:
    # How long decode waits.
    SGLANG_WAIT = EnvInt(300)
    SGLANG_ON = EnvBool(False)  # turn it on
    SGLANG_HIP = EnvBool(_default_hip)
    SGLANG_NEW = EnvIntWithAlias(2, deprecated_name="SGLANG_OLD")
    SGLANG_BIG = EnvInt(2 ** 31)
    not_an_env = 3
'''
METRICS = '''
from collections import Counter as C
from prometheus_client import Counter, Gauge, Histogram

class Collector:
    def __init__(self, labels):
        self.g = Gauge(name="sglang:queue_reqs", documentation="Queue.",
                       labelnames=labels.keys(), multiprocess_mode="mostrecent")
        self.c = Counter(name="sglang:tokens", documentation="Tokens.",
                         labelnames=list(labels.keys()) + ["mode"])
        self.c2 = Counter("sglang:fails_total", "Fails.")
        self.h = Histogram(name="sglang:latency_seconds", documentation="Latency.",
                           labelnames=["a", "b"])
        self.n = Counter(x for x in labels)
        self.v = Gauge(name=name, documentation="variable name")
'''


def _files() -> dict[str, str]:
    return {
        "srt/server_args.py": SERVER_ARGS,
        "srt/arg_groups/fields/disagg.py": FIELDS,
        "srt/arg_groups/choices.py": CHOICES,
        "srt/environ.py": ENVIRON,
        "srt/observability/metrics_collector.py": METRICS,
        "_version.py": "__version__ = version = '9.9.9'\n",
    }


def _write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / "sglang" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture()
def cat(tmp_path: Path) -> Catalog:
    return build_catalog(_write_tree(tmp_path, _files()))


def test_add_argument_flags(cat: Catalog) -> None:
    port = cat.flag("--port")
    assert port is not None and port.default == 30000 and port.type == "int"
    assert port.help == "The port." and port.origin and port.origin.startswith("srt/server_args")
    mem = cat.flag("--mem-fraction-static=0.8")
    assert mem is not None and mem.default is None and mem.help == "Memory fraction."
    chunk = cat.flag("-c")
    assert chunk is not None and chunk.name == "--chunk" and chunk.default == 4096
    weird = cat.flag("weird")
    assert weird is not None and weird.default is None and weird.default_expr == "compute()"
    assert weird.help == "x {y} z"
    old = cat.flag("--old-flag")
    assert old is not None and old.action == "store_true" and old.default is False
    # explicit registration in server_args.py wins over the record field of that name
    mode = cat.flag("--mode")
    assert mode is not None and mode.choices == ("a", "b") and mode.default == "null"


def test_record_field_flags(cat: Catalog) -> None:
    backend = cat.flag("--backend")
    assert backend is not None and backend.choices == ("mooncake", "nixl", "fake")
    assert backend.default == "mooncake" and backend.help == "Transfer backend."
    tp = cat.flag("--tensor-parallel-size")
    assert tp is not None and tp.name == "--tp-size" and tp.default == 1
    assert not cat.knows_flag("--hidden")
    assert not cat.knows_flag("--plain")
    ex = cat.flag("--enable-x")
    assert ex is not None and ex.action == "store_true" and ex.default is False
    urls = cat.flag("--urls")
    assert urls is not None and urls.nargs == "+" and urls.default == []
    model = cat.flag("--model")
    assert model is not None and model.required and model.dest == "model_path"
    assert cat.flag("model_path") == model


def test_envs(cat: Catalog) -> None:
    wait = cat.env("SGLANG_WAIT")
    assert wait is not None and wait.type == "int" and wait.default == 300
    assert wait.help == "How long decode waits."
    on = cat.env("SGLANG_ON=1")
    assert on is not None and on.default is False and on.help == "turn it on"
    hip = cat.env("SGLANG_HIP")
    assert hip is not None and hip.default is None and hip.default_expr == "_default_hip"
    assert cat.env("SGLANG_OLD") == cat.env("SGLANG_NEW")
    big = cat.env("SGLANG_BIG")
    assert big is not None and big.default == 2**31
    assert cat.env("not_an_env") is None and set(cat.env_vars) == {
        "SGLANG_WAIT", "SGLANG_ON", "SGLANG_HIP", "SGLANG_NEW", "SGLANG_BIG"}


def test_metrics(cat: Catalog) -> None:
    assert set(cat.metrics) == {"sglang:queue_reqs", "sglang:tokens_total",
                                "sglang:fails_total", "sglang:latency_seconds"}
    g = cat.metrics["sglang:queue_reqs"]
    assert g.type == "gauge" and g.labels == () and g.labels_expr == "labels.keys()"
    c = cat.metrics["sglang:tokens_total"]
    assert c.declared == "sglang:tokens" and c.labels == ("mode",)
    assert c.samples == ("sglang:tokens_total", "sglang:tokens_created")
    h = cat.metrics["sglang:latency_seconds"]
    assert h.labels == ("a", "b") and "sglang:latency_seconds_bucket" in h.samples
    assert cat.metric("sglang:latency_seconds_bucket") == h
    assert cat.metric("sglang_tokens_total") == c
    assert cat.metric("sglang:tokens_created") == c
    assert cat.version == "9.9.9"


def test_wheel_and_dir_agree(tmp_path: Path, cat: Catalog) -> None:
    whl = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for rel, text in _files().items():
            zf.writestr("sglang/" + rel, text)
    from_wheel = build_catalog(whl)
    assert from_wheel.flags == cat.flags and from_wheel.metrics == cat.metrics
    assert from_wheel.source.startswith(whl.name + " sha256:")


def test_memory_tree_matches(cat: Catalog) -> None:
    assert build_from_tree(SourceTree.from_texts(_files())).flags == cat.flags


def test_cli_build_default_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _write_tree(tmp_path / "src", _files())
    monkeypatch.chdir(tmp_path)
    out = cli_build(str(src), None)
    assert out == tmp_path / "sglang-9.9.9.json"
    assert Catalog.from_json(out.read_text()).flag("--port") is not None


def _file(p: Path, name: str, data: bytes) -> Path:
    (p / name).write_bytes(data)
    return p / name


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "path not found"),
    (lambda p: p, "not an sglang tree"),
    (lambda p: _file(p, "x.whl", b"not a zip"), "unreadable wheel"),
    (lambda p: _file(p, "notes.txt", b"hi"), "not an sglang wheel"),
])
def test_errors_are_one_line(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    (tmp_path / "empty").mkdir()
    target = make(tmp_path / "empty")
    with pytest.raises(PdforensicsError) as err:
        cli_build(str(target), str(tmp_path / "out.json"))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out.json").exists()


def test_zip_without_sglang(tmp_path: Path) -> None:
    whl = tmp_path / "other-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("other/__init__.py", "")
    with pytest.raises(PdforensicsError, match="not an sglang wheel"):
        build_catalog(whl)


def test_syntax_errors_do_not_crash(tmp_path: Path) -> None:
    files = _files()
    files["srt/environ.py"] = "class Envs:\n  X = EnvInt(\n"
    files["srt/observability/broken.py"] = "Gauge(name='a', documentation=\n"
    cat = build_catalog(_write_tree(tmp_path, files))
    assert cat.env_vars == {} and cat.flag("--port") is not None


def test_invalid_escapes_in_sglang_parse_quietly(tmp_path: Path) -> None:
    """sglang 0.4.6 has `"\\-"` in a regex: the catalog reads such a module like any other and
    Python's warning about it does not reach the user (it is sglang's code, not ours)."""
    files = {rel: text + '\nPATTERN = "[a-z\\-]+\\("\n' for rel, text in _files().items()}
    quiet = build_catalog(_write_tree(tmp_path / "a", _files()))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cat = build_catalog(_write_tree(tmp_path / "b", files))
    assert [str(w.message) for w in seen] == []
    assert cat.env_vars == quiet.env_vars and cat.metrics == quiet.metrics and cat.flags == quiet.flags
    assert cat.env_vars and cat.metrics and cat.flags
