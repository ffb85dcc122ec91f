"""The kernel log beneath SGLang, on field artifacts: Xid events with their class (NVIDIA's
catalog), a GPU gone with or without an Xid line, PCIe AER with its detail lines, the OOM
killer's victim (not its allocator), GSP RPC history."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.parsers.kernel_log import AER, GPU_LOST, GSP, OOM_KILL, SMI_UNREACHABLE, XID, parse_kernel_log
from pdforensics.parsers.xid_table import TABLE, classify

KERNEL = Path(__file__).resolve().parent.parent / "data" / "field" / "kernel"


def _events(slug: str):  # type: ignore[no-untyped-def]
    return parse_kernel_log((KERNEL / f"{slug}.log").read_text()).events


def test_xid_79_and_the_fallen_off_line_name_the_gpu() -> None:
    ev = _events("akash-209-xid79-dmesg-T-nvidia-smi-unknown")
    assert [(e.kind, e.device) for e in ev] == [(SMI_UNREACHABLE, "0000:a1:00"), (XID, "0000:a1:00"),
                                                (GPU_LOST, "0000:a1:00")]
    x = ev[1]
    assert x.xid == 79 and x.pid is None and x.process is None and x.epoch is not None
    assert x.suspect == "PCI:0000:a1:00"
    assert parse_kernel_log((KERNEL / "akash-209-xid79-dmesg-T-nvidia-smi-unknown.log").read_text()
                            ).driver == "535.161.07"


def test_aer_events_keep_their_detail_lines() -> None:
    ev = _events("gpu-burn-1-aer-surprise-down-then-xid79")
    aer = [e for e in ev if e.kind == AER]
    assert [e.severity for e in aer] == ["Corrected", "Uncorrected (Fatal)"]
    assert "Surprise Down Error    (First)" in aer[1].text and aer[1].suspect is None
    assert ev[-1].kind == XID and ev[-1].xid == 79 and ev[-1].uptime_s == pytest.approx(74889.644138)


def test_relative_time_dmesg_aer_and_nvidia_smi_unreachable() -> None:
    ev = _events("returnn-1486-aer-corrected-timeout-dmesg-H")
    assert ev[0].kind == SMI_UNREACHABLE and ev[0].device == "0000:03:00"
    assert [e.severity for e in ev if e.kind == AER] == ["Corrected"] * 3


def test_xid_45_names_the_xid_it_follows() -> None:
    ev = _events("open-gpu-1150-xid45-caused-by-xid149-145")
    assert {(e.xid, e.caused_by) for e in ev} == {(45, 149), (45, 145)}
    assert ev[0].pid == 1818990 and ev[0].process == "python3"


def test_xid_154_states_the_recovery_and_gsp_names_the_gpu() -> None:
    ev = _events("nvforum-371272-xid62-gsp-watchdog-xid154")
    assert [(e.kind, e.xid) for e in ev] == [(XID, 62), (GSP, None), (XID, 154)]
    assert ev[2].recovery == "GPU Reset Required" and ev[1].device == "GPU0"
    (hist,) = _events("open-gpu-1230-gsp-rpc-history-gpu6")
    assert hist.kind == GSP and hist.suspect == "GPU6"


def test_an_elided_pci_address_is_no_device() -> None:
    ev = _events("nccl-2241-xid145-xid137-nvlink-b200")
    assert [(e.xid, e.device) for e in ev] == [(145, None), (137, None)]


def test_the_oom_killers_victim_not_its_allocator() -> None:
    (kill,) = [e for e in _events("qaconv-19-oom-python-then-invoker-trace") if e.kind == OOM_KILL]
    assert (kill.kind, kill.pid, kill.process, kill.suspect) == (OOM_KILL, 698405, "python", "698405 (python)")
    (wrapped,) = [e for e in _events("tranx-41-oom-kill-python3-wrapped") if e.kind == OOM_KILL]
    assert (wrapped.pid, wrapped.process) == (25315, "python3")
    names = [e.process for e in _events("docker-1001-oom-python3-syslog-repeated")
             if e.kind == OOM_KILL]
    assert names == ["python3", "(resolved)", "python3", "(resolved)"]


def test_xid_table_covers_the_classes_the_issue_names() -> None:
    for xid in (13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120):
        assert xid in TABLE, xid
    assert classify(79).severity == "critical" and classify(79).bucket == "RESTART_BM"
    assert classify(63).severity == "info" and classify(45).klass == "consequence"
    assert classify(13).klass == "app" and classify(119).bucket == "RESET_GPU"
    assert classify(999).klass == "other"


def test_every_kernel_artifact_reads_something() -> None:
    for f in sorted(KERNEL.glob("*.log")):
        assert parse_kernel_log(f.read_text()).events, f.name


def test_this_machines_own_kernel_log_reads_with_no_gpu_event() -> None:
    import subprocess

    got = subprocess.run(["dmesg", "--time-format=iso"], capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"dmesg refused here: {got.stderr.strip()[:100]}")
    klog = parse_kernel_log(got.stdout)
    assert not [e for e in klog.events if e.kind in (XID, GPU_LOST)]  # no GPU on this machine
