"""NVIDIA Xid codes: what each class means and what an operator does about it.

Source: NVIDIA's Xid catalog for Ampere and newer GPUs,
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (its mnemonic, its
"Resolution Bucket (Immediate Action)" and "(Investigatory Action)" columns and trigger
notes), read for this table on 2026-12-04 through a stored copy of that page; NVIDIA's GPU
memory error management guide for 48/63/64/94/95
(https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/); the multi-line "fallen off the
bus" message without an Xid line is Xid 79 (NVIDIA's reply in
https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507). Meanings are in our own
words; ``bucket`` quotes the catalog's immediate action. docs/rules.md names the source too.

Classes: ``app`` (the application faulted: restart it, check the code), ``memory`` (ECC),
``nvlink``, ``bus`` (the GPU left PCIe), ``firmware`` (GSP / PMU micro-controllers),
``hang`` (the GPU stopped processing), ``consequence`` (cleanup after an earlier error),
``recovery`` (the driver states the recovery it now needs), ``info``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["critical", "warning", "info"]


@dataclass(frozen=True)
class XidClass:
    xid: int
    mnemonic: str
    klass: str
    severity: Severity  # critical: the GPU needs a reset / the node a reboot
    meaning: str
    action: str
    bucket: str  # the catalog's immediate action


def _x(xid: int, mnemonic: str, klass: str, severity: Severity, meaning: str, action: str,
       bucket: str) -> XidClass:
    return XidClass(xid, mnemonic, klass, severity, meaning, action, bucket)


_APP = "restart the application; if it repeats on healthy code, run it under compute-sanitizer " \
       "or cuda-gdb; only a fault that stays on one GPU with known-good code points at hardware"
_NVL5 = ("NVLink (Blackwell NVLink5) error: follow the subcode; fatal ones need a GPU reset and "
         "a fabric manager / NVLink check (nvidia-smi nvlink -e)")

TABLE: dict[int, XidClass] = {x.xid: x for x in (
    _x(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "hang", "warning",
       "the GPU stopped processing (channel idle timeout)", "restart the application; contact "
       "support if it repeats", "RESTART_APP"),
    _x(13, "ROBUST_CHANNEL_GR_EXCEPTION", "app", "warning",
       "graphics engine exception: usually the kernel faulted (out-of-range access, illegal "
       "instruction), rarely hardware", _APP, "RESTART_APP"),
    _x(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "app", "warning",
       "GPU memory page fault (an illegal address): usually the application, sometimes driver "
       "or hardware", _APP + "; the same fault repeating on one GPU (same PCI id) across "
       "applications: run diagnostics", "RESTART_APP"),
    _x(32, "ROBUST_CHANNEL_PBDMA_ERROR", "bus", "warning",
       "invalid or corrupted push buffer stream: mostly PCIe link quality",
       "check the GPU's PCIe link (AER errors in this log, lspci link state)", "RESTART_APP"),
    _x(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "app", "warning",
       "GPU stopped processing after the application hit a software fault; the GPU stays "
       "healthy", "restart the application; nothing to do on the GPU", "IGNORE"),
    _x(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "consequence", "info",
       "preemptive cleanup: the driver tore down the application's channels after an earlier "
       "error or a kill / Ctrl-C / GPU reset", "find the earlier Xid it follows (newer drivers "
       "name it: 'caused by previous Xid N') and act on that one", "WORKFLOW_XID_45"),
    _x(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "hang", "critical",
       "GPU stopped processing", "drain the node and reset the GPU; contact support if it "
       "repeats", "RESET_GPU"),
    _x(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "memory", "critical",
       "double-bit (uncorrectable) ECC error, also reported to the application",
       "drain; reset the GPU or reboot so the row is remapped; RMA when it recurs or remapping "
       "fails (nvidia-smi -q -d ROW_REMAPPER)", "WORKFLOW_XID_48"),
    _x(61, "PMU_BREAKPOINT", "firmware", "warning",
       "internal micro-controller breakpoint (older GPUs; unused on Ampere and newer)",
       "reset the GPU if work stopped; contact support if it repeats", "CONTACT_SUPPORT"),
    _x(62, "PMU_HALT_ERROR", "firmware", "critical",
       "internal micro-controller halted (GSP-era drivers follow with Xid 154)",
       "reset the GPU (Xid 154 states the recovery needed); report it if it repeats",
       "RESET_GPU"),
    _x(63, "INFOROM_DRAM_RETIREMENT_EVENT", "memory", "info",
       "ECC row remapping / page retirement recorded: the application keeps running",
       "reset the GPU or reboot when convenient to activate the remap; watch its rate (a "
       "rising rate heads towards Xid 64)", "IGNORE"),
    _x(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "memory", "critical",
       "ECC row remapping / page retirement failed", "reset the GPU; a remapping failure is an "
       "RMA criterion: contact support", "RESET_GPU"),
    _x(74, "NVLINK_ERROR", "nvlink", "critical",
       "NVLink error: the link, its connector, or the device at the far end (a failing GPU "
       "makes its NVLink peers report 74)", "reset the GPU or reboot the node to clear it; "
       "check nvidia-smi nvlink -e and the fabric manager; service on recurrence",
       "WORKFLOW_NVLINK_ERR"),
    _x(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "bus", "critical",
       "the GPU has fallen off the bus: it no longer answers on PCIe, all work on it is lost",
       "cold-reboot the node; check PCIe AER lines, temperatures, power cables and seating; "
       "RMA if it repeats", "RESTART_BM"),
    _x(92, "EXCESSIVE_SBE_INTERRUPTS", "memory", "warning",
       "high rate of single-bit (corrected) ECC errors", "nothing immediate; contact support "
       "if the rate keeps rising", "IGNORE"),
    _x(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "memory", "warning",
       "contained uncorrectable memory error: only the application that touched it is "
       "affected", "restart that application; reset the GPU when convenient", "RESTART_APP"),
    _x(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "memory", "critical",
       "uncontained memory error: every application on the GPU is affected",
       "drain and reset the GPU before restarting work; RMA criteria as for Xid 48",
       "RESET_GPU"),
    _x(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "hang", "critical",
       "context switch timeout (often right after an SM exception, Xid 13)",
       "reset the GPU; look at the Xid lines just before it", "RESET_GPU"),
    _x(119, "GSP_RPC_TIMEOUT", "firmware", "critical",
       "the driver timed out waiting for the GPU System Processor (GSP) to answer an RPC",
       "reset the GPU or power-cycle the node; a repeat after a power cycle is a driver / "
       "firmware issue for NVIDIA", "RESET_GPU"),
    _x(120, "GSP_ERROR", "firmware", "critical", "error in code running on the GSP core",
       "reset the GPU or power-cycle the node; report a repeat to NVIDIA", "RESET_GPU"),
    _x(137, "NVLINK_PRIV_ERR", "nvlink", "warning",
       "NVLink privilege error: an illegal peer-to-peer access reported by the remote MMU",
       "usually the application: run it under compute-sanitizer; else driver or hardware",
       "IGNORE"),
    _x(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "memory", "critical",
       "uncorrectable ECC error the driver could not retire or remap", "reset the GPU; contact "
       "the vendor if it persists", "RESET_GPU"),
    *(_x(n, name, "nvlink", "critical", _NVL5, "reset the GPU; check the fabric manager and "
         "NVLink counters; the subcode says whether the peer device is at fault",
         "WORKFLOW_NVLINK5_ERR")
      for n, name in ((144, "NVLINK_SAW_ERROR"), (145, "NVLINK_RLW_ERROR"),
                      (146, "NVLINK_TLW_ERROR"), (147, "NVLINK_TREX_ERROR"),
                      (148, "NVLINK_NVLPW_CTRL_ERROR"), (149, "NVLINK_NETIR_ERROR"),
                      (150, "NVLINK_MSE_ERROR"))),
    _x(154, "GPU_RECOVERY_ACTION_CHANGED", "recovery", "info",
       "the driver states the recovery now required for an earlier Xid (None, Drain P2P, "
       "Drain and Reset, GPU Reset Required, Node Reboot Required)",
       "do the recovery it names; act on the Xid it follows", "XID_154"),
    _x(155, "NVLINK_SW_DEFINED_ERROR", "nvlink", "warning",
       "NVLink link down flagged as intentional (also SLEEP transitions)",
       "only act with a corroborating NVLink failure", "RESET_GPU"),
    _x(158, "GPU_FATAL_TIMEOUT", "hang", "critical", "GPU fatal timeout",
       "reset the GPU; contact support if it repeats", "RESET_GPU"),
)}


def classify(xid: int) -> XidClass:
    """The class of ``xid``; codes the table lacks are ``info``-level unknowns."""
    known = TABLE.get(xid)
    if known is not None:
        return known
    return XidClass(xid, "?", "other", "warning", "an Xid this table does not describe",
                    "look it up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors)", "?")
