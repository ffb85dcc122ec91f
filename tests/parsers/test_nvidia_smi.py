"""nvidia-smi parsers on the nvsmi_* samples (commands in tests/data/nvsmi_COMMANDS.md)."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.nvidia_smi import (
    QUERY_GPU_FIELDS,
    parse_compute_apps,
    parse_nvlink_errors,
    parse_query_gpu,
    parse_row_remapper,
    parse_xid_lines,
)

DATA = Path(__file__).resolve().parent.parent / "data"


def _load(name: str) -> str:
    return (DATA / name).read_text()


def test_query_gpu_with_header_units_and_missing_values() -> None:
    gpus = parse_query_gpu(_load("nvsmi_query_gpu_h200.csv"))
    assert len(gpus) == 5
    g0 = gpus[0]
    assert g0.index == 0 and g0.name == "NVIDIA H200"
    assert g0.uuid == "GPU-3f9a1c52-8e7d-4b1a-9c0e-2d5f6a7b8c91"
    assert g0.utilization_gpu_pct == 0.0 and g0.memory_used_mib == 128810.0
    assert g0.memory_total_mib == 143771.0 and g0.temperature_c == 33.0
    assert g0.power_draw_w == 118.42 and g0.clocks_sm_mhz == 1980.0
    assert g0.clocks_mem_mhz == 3201.0 and g0.throttle_reasons == 1 and g0.pstate == "P0"
    assert g0.ecc_uncorrected_volatile == 0 and g0.error is None
    assert dict(g0.raw)["memory.used"] == "128810 MiB"
    assert gpus[2].utilization_gpu_pct == 100.0
    g3 = gpus[3]
    assert g3.utilization_gpu_pct is None and g3.power_draw_w is None
    assert g3.throttle_reasons == 4 and g3.ecc_uncorrected_volatile == 2
    lost = gpus[4]
    assert lost.index is None and lost.bus_id == "0000:BA:00.0"
    assert lost.error is not None and lost.error.startswith("Unable to determine the device handle")


def test_query_gpu_noheader_nounits() -> None:
    gpus = parse_query_gpu(_load("nvsmi_query_gpu_noheader_nounits.csv"), QUERY_GPU_FIELDS)
    assert [g.index for g in gpus] == [0, 1]
    assert gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert gpus[0].utilization_gpu_pct == 97.0 and gpus[0].memory_total_mib == 81559.0
    assert gpus[0].power_draw_w == 687.91 and gpus[1].ecc_uncorrected_volatile is None


def test_query_gpu_errors() -> None:
    assert parse_query_gpu("") == ()
    assert parse_query_gpu("No devices were found\n", QUERY_GPU_FIELDS) == ()
    with pytest.raises(ParseError, match="NVIDIA-SMI has failed"):
        parse_query_gpu("NVIDIA-SMI has failed because it couldn't communicate with the "
                        "NVIDIA driver. Make sure that the latest NVIDIA driver is installed.\n")
    with pytest.raises(ParseError, match=r"expected 2 comma-separated values, got 3 \(line 2\)"):
        parse_query_gpu("index, name\n0, a, b\n")
    with pytest.raises(ParseError, match="index"):
        parse_query_gpu("index, name\nzero, H200\n")


def test_compute_apps() -> None:
    apps = parse_compute_apps(_load("nvsmi_compute_apps.csv"))
    assert [(a.pid, a.process_name) for a in apps] == [
        (4101, "sglang::scheduler_TP0"), (4102, "sglang::scheduler_TP1"), (4388, "/usr/bin/python3")]
    assert apps[0].used_memory_mib == 128790.0 and apps[2].used_memory_mib is None
    assert apps[1].gpu_uuid == "GPU-5b2e7d10-1a3c-4f6e-8b9d-0c1e2f3a4b5c"
    assert parse_compute_apps("pid, process_name, gpu_uuid, used_gpu_memory [MiB]\n") == ()


def test_nvlink_errors() -> None:
    gpus = parse_nvlink_errors(_load("nvsmi_nvlink_errors.txt"))
    assert [(g.index, g.name, len(g.links)) for g in gpus] == [(0, "NVIDIA H200", 18),
                                                                (1, "NVIDIA H200", 18)]
    assert gpus[0].uuid == "GPU-3f9a1c52-8e7d-4b1a-9c0e-2d5f6a7b8c91"
    assert gpus[0].total("Replay Errors") == 1204 and gpus[0].total("CRC Errors") == 37
    assert gpus[0].links[5].counter("Replay Errors") == 1204
    assert gpus[1].total("Replay Errors") == 0
    with pytest.raises(ParseError, match="not an nvidia-smi nvlink -e line"):
        parse_nvlink_errors("GPU 0: X (UUID: GPU-1)\nsomething else\n")
    assert parse_nvlink_errors("") == ()


def test_row_remapper() -> None:
    rows = parse_row_remapper(_load("nvsmi_row_remapper.txt"))
    assert [r.bus_id for r in rows] == ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0"]
    clean, pending, unsupported = rows
    assert (clean.correctable, clean.uncorrectable, clean.pending, clean.failure_occurred) == (
        0, 0, False, False)
    assert dict(clean.histogram) == {"Max": 2560, "High": 0, "Partial": 0, "Low": 0, "None": 0}
    assert pending.uncorrectable == 2 and pending.pending is True
    assert dict(pending.histogram)["High"] == 3
    assert unsupported.supported is False and unsupported.pending is None
    assert parse_row_remapper("") == ()


def test_xid_lines() -> None:
    events = parse_xid_lines(_load("nvsmi_xid_kernel.txt"))
    assert [(e.pci, e.xid) for e in events] == [
        ("0000:3b:00", 79), ("0000:2a:00", 94), ("0000:18:00", 13), ("0000:01:00", 94)]
    fell = events[0]
    assert fell.pid == 4103 and fell.process == "sglang::schedul"
    assert fell.message == "GPU has fallen off the bus." and fell.uptime_s == 8812.33452
    assert fell.epoch is None
    t = float(calendar.timegm((2026, 12, 2, 10, 20, 28, 0, 0, 0)))
    assert events[1].epoch == t and events[1].process == "python3"
    assert events[2].pid is None and events[2].process is None
    assert events[2].epoch == t + 34
    assert events[3].pid == 7194 and events[3].message.startswith("Contained: CE User Channel")
    assert parse_xid_lines("") == () and parse_xid_lines("nothing here\n") == ()
