"""SAFEGUARDS_DISABLED on small built captures: which servers, which values, which defaults."""

from __future__ import annotations

from typing import Any

from pdforensics.analysis.engine import analyze
from pdforensics.analysis.findings import Finding
from pdforensics.views.loaded import load_capture

GEN = "sglang:generation_tokens_total"
HEALTHY_ENV = {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "300",
               "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "300"}


def argv(role: str, *extra: str) -> tuple[str, ...]:
    return ("python", "-m", "sglang.launch_server", "--model-path", "/m",
            "--disaggregation-mode", role, "--port", "1", *extra)


def samples() -> list[dict[str, Any]]:
    return [{GEN: 100 + 50 * i, "sglang:num_running_reqs": 2} for i in range(3)]


def findings(builder: Any) -> list[Finding]:
    a = analyze(load_capture(builder.write()))
    return [f for f in a.findings if f.key == "SAFEGUARDS_DISABLED"]


def test_defaults_and_sane_values_do_not_fire(builder: Any) -> None:
    builder.add(host="p", role="prefill", port=1, samples=samples(), argv=argv("prefill"),
                env=HEALTHY_ENV)
    builder.add(host="d", role="decode", port=2, samples=samples(),
                argv=argv("decode", "--watchdog-timeout", "600"), env={})
    assert findings(builder) == []


def test_huge_decode_timeouts_cite_value_default_and_fix(builder: Any) -> None:
    builder.add(host="p", role="prefill", port=1, samples=samples(), argv=argv("prefill"),
                env=HEALTHY_ENV)
    builder.add(host="d", role="decode", port=2, samples=samples(), version="0.5.9",
                argv=argv("decode", "--watchdog-timeout=100000"),
                env={"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "100000",
                     "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "1000000"})
    [f] = findings(builder)
    assert f.severity == "warning" and "d decode:2" in f.title
    text = "\n".join(str(e) for e in f.evidence)
    assert "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=100000" in text
    assert "default of sglang 0.5.9: 300" in text
    assert "--watchdog-timeout=100000" in text and "environ" in text and "cmdline" in text
    assert "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE=1000000" in text
    assert "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=300" in f.next_step
    assert "--watchdog-timeout 300" in f.next_step
    assert "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE=2" in f.next_step


def test_role_decides_which_timeouts_count(builder: Any) -> None:
    # prefill never reads the waiting timeout; decode never reads the bootstrap timeout
    builder.add(host="p", role="prefill", port=1, samples=samples(), argv=argv("prefill"),
                env={"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "inf"})
    builder.add(host="d", role="decode", port=2, samples=samples(), argv=argv("decode"),
                env={"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "99999"})
    assert findings(builder) == []


def test_disabled_bootstrap_timeout_on_prefill(builder: Any) -> None:
    builder.add(host="p", role="prefill", port=1, samples=samples(), argv=argv("prefill"),
                env={"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "inf"})
    builder.add(host="d", role="decode", port=2, samples=samples(), argv=argv("decode"), env={})
    [f] = findings(builder)
    assert "p prefill:1" in f.title
    assert "never fires" in str(f.evidence[0])


def test_old_version_cites_its_own_default(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=samples(), version="0.4.10",
                argv=argv("decode"), env={"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "7200"})
    [f] = findings(builder)
    assert "default of sglang 0.4.10: 300" in str(f.evidence[0])
    assert "2.0 h" in str(f.evidence[0])
