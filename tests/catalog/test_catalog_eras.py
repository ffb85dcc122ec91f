"""Catalogs of sglang releases from the first PD one to the newest: env vars read anywhere.

The wheels come from `pip download --no-deps` into the repository's .cache/wheels (shared
with the log table tests); offline, each test skips saying which wheel it lacks.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from pdforensics.catalog import build_catalog
from pdforensics.catalog.fetch import fetch_wheel
from pdforensics.catalog.model import Catalog
from pdforensics.catalog.safeguard_table import SHIPPED, TABLE_VERSIONS, build_table
from pdforensics.errors import PdforensicsError

pytestmark = pytest.mark.network
WHEELS = Path(__file__).resolve().parents[2] / ".cache" / "wheels"
PD_TIMEOUTS = ("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT",
               "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL",
               "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE")
DEFAULTS = (300, 300, 5.0, 2)


def _wheel(version: str) -> Path:
    try:
        return fetch_wheel(version, WHEELS)
    except PdforensicsError as exc:
        pytest.skip(f"offline, no sglang {version} wheel: {exc}")


@cache
def _catalog(version: str) -> Catalog:
    return build_catalog(_wheel(version))


def test_first_pd_release_has_no_pd_timeouts() -> None:
    cat = _catalog("0.4.6")
    assert cat.version == "0.4.6"
    assert not any(cat.env(n) for n in PD_TIMEOUTS)
    # 0.4.6 has no environ.py: every env var comes from reads in the source
    assert len(cat.env_vars) > 50
    torch_compile = cat.env("SGLANG_ENABLE_TORCH_COMPILE")
    assert torch_compile is not None and torch_compile.type == "bool"
    assert torch_compile.default == "false"  # get_bool_env_var's own default


def test_ad_hoc_reads_of_0_4_10() -> None:
    """0.4.10 reads the PD timeouts in the mooncake backend with get_int_env_var/os.getenv."""
    cat = _catalog("0.4.10")
    for name, default in zip(PD_TIMEOUTS, DEFAULTS, strict=True):
        env = cat.env(name)
        assert env is not None and env.default == default, (name, env)
        assert env.read_by == ("srt/disaggregation/mooncake/conn.py",)
        assert env.origin and env.origin.startswith("srt/disaggregation/mooncake/conn.py:")
    heartbeat = cat.env("SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL")
    bootstrap = cat.env("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT")
    assert heartbeat is not None and heartbeat.type == "float"  # float(os.getenv)
    assert bootstrap is not None and bootstrap.type == "int"  # get_int_env_var


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_declared_and_read_in_0_5(version: str) -> None:
    cat = _catalog(version)
    for name, default in zip(PD_TIMEOUTS, DEFAULTS, strict=True):
        env = cat.env(name)
        assert env is not None and env.default == default, (name, env)
        assert env.origin and env.origin.startswith("srt/environ.py:")
        assert any(m.startswith("srt/disaggregation/") for m in env.read_by), env.read_by
    if version == "0.5.9":  # mori still reads two of them ad hoc beside environ.py
        first = cat.env(PD_TIMEOUTS[0])
        assert first is not None and "srt/disaggregation/mori/conn.py" in first.read_by
    else:  # read by CUDA, but sglang 0.5.23 checks it too
        hook = cat.env("CUDA_ENABLE_USER_TRIGGERED_COREDUMP")
        assert hook is not None and hook.read_by


def test_shipped_safeguard_table_equals_fresh_build() -> None:
    fresh = build_table([_wheel(v) for v in TABLE_VERSIONS])
    assert json.loads(json.dumps(fresh)) == json.loads(SHIPPED.read_text())
