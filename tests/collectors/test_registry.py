"""Conformance: every registered source is fully described and its sample parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.collectors import REGISTRY
from pdforensics.collectors.base import Target
from pdforensics.model import HostSpec, ProcessInfo
from pdforensics.sglang.discovery import Service
from pdforensics.views.readings import parse_output, resolve

DATA = Path(__file__).parent.parent / "data"
HOST = HostSpec(name="h", address="local")
PROC = ProcessInfo(pid=42, ppid=1, state="S", start_epoch=0.0, threads=3, rss_kb=10,
                   args="/usr/bin/python3 -m sglang.launch_server --port 30000", kind="server",
                   role="decode", port=30000, root_pid=42)
SVC = Service(role="decode", kind="server", port=30000, address="127.0.0.1", root_pid=42,
              pids=(42,), metrics_port=29000, unit="sglang-decode.service",
              log_file="/var/log/sglang/decode.log", declared=True)
TARGETS = {"host": Target(), "process": Target(process=PROC), "unit": Target(service=SVC,
           unit="sglang-decode.service"), "endpoint": Target(service=SVC, path="/x")}


def test_registry_is_not_empty() -> None:
    assert len(REGISTRY) >= 25


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_source_is_complete(name: str) -> None:
    src = REGISTRY[name]
    assert src.description and src.timeout_s > 0 and src.max_bytes > 0
    assert src.parser is not None, f"{name} has no parser"
    resolve(src.parser)
    assert src.sample is not None and (DATA / src.sample).exists(), src.sample
    argv = src.build(HOST, TARGETS[src.scope])
    assert argv and all(isinstance(a, str) for a in argv)
    # single statement: no shell chaining or pipes smuggled into one argv element
    assert not any(tok in ("&&", "||", ";", "|") for tok in argv), argv


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_sample_parses(name: str) -> None:
    src = REGISTRY[name]
    assert src.sample is not None
    data = (DATA / src.sample).read_bytes()
    parsed = parse_output(name, data)
    assert parsed is not None
