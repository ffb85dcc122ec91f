"""GPU-depth rules on small captures built from the real-format nvidia-smi samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdforensics.analysis.engine import analyze
from pdforensics.views.loaded import load_capture

DATA = Path(__file__).parent.parent / "data"


def _run(builder: Any) -> Any:
    return analyze(load_capture(builder.write()))


def _decode(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[{"sglang:num_running_reqs": 0}] * 2)


def test_row_remap_pending_is_a_finding(builder: Any) -> None:
    _decode(builder)
    builder.host_outputs[("d", "nvidia_smi_row_remapper")] = (
        (DATA / "nvsmi_row_remapper.txt").read_text(), "txt")
    a = _run(builder)
    f = next(f for f in a.findings if f.key == "GPU_ROW_REMAP_PENDING")
    assert f.severity == "warning" and f.title.startswith("d: 1 GPU(s)")
    assert "00000000:2A:00.0" in str(f.evidence[0]) and "uncorrectable rows 2" in str(f.evidence[0])


def test_nvlink_errors_is_a_finding(builder: Any) -> None:
    _decode(builder)
    builder.host_outputs[("d", "nvidia_smi_nvlink")] = (
        (DATA / "nvsmi_nvlink_errors.txt").read_text(), "txt")
    a = _run(builder)
    f = next(f for f in a.findings if f.key == "NVLINK_ERRORS")
    assert any("GPU 0 link 5: Replay Errors 1204, CRC Errors 37" in str(e) for e in f.evidence)


def test_clean_gpu_health_gives_no_finding(builder: Any) -> None:
    _decode(builder)
    clean = "GPU 0: NVIDIA H200 (UUID: GPU-1)\n\t Link 0: Replay Errors: 0\n"
    builder.host_outputs[("d", "nvidia_smi_nvlink")] = (clean, "txt")
    a = _run(builder)
    assert not [f for f in a.findings if f.key in ("NVLINK_ERRORS", "GPU_ROW_REMAP_PENDING")]
    assert any(s.rule == "GPU_ROW_REMAP_PENDING" for s in a.skipped)


def test_nvml_reaches_the_host_view(builder: Any) -> None:
    _decode(builder)
    builder.host_outputs[("d", "nvml")] = ((DATA / "nvml_h200.json").read_text(), "json")
    host = next(h for h in load_capture(builder.write()).hosts if h.name == "d")
    assert host.nvml is not None and host.nvml.driver_version == "570.124.06"
    assert [g.pids for g in host.nvml.gpus] == [(48213,), (48214,)]


def test_report_gpu_section_shows_health_rows(builder: Any) -> None:
    from pdforensics.report.gpus import build_gpus

    _decode(builder)
    builder.host_outputs[("d", "nvidia_smi_row_remapper")] = (
        (DATA / "nvsmi_row_remapper.txt").read_text(), "txt")
    builder.host_outputs[("d", "nvidia_smi_nvlink")] = (
        (DATA / "nvsmi_nvlink_errors.txt").read_text(), "txt")
    builder.host_outputs[("d", "nvml")] = ((DATA / "nvml_unavailable.json").read_text(), "json")
    hosts, _missing = build_gpus(load_capture(builder.write()))
    rows = next(h for h in hosts if h.host == "d").health
    checks = {(r.check, r.bad) for r in rows}
    assert ("NVLink", True) in checks and ("row remapper", True) in checks
    assert any(r.gpu == "00000000:3A:00.0" and r.state == "not supported" for r in rows)
    assert any(r.check == "NVML" and r.state.startswith("unavailable") for r in rows)
