"""Everything beneath SGLang that one text holds: torch's NCCL watchdog, NCCL's own lines and
RAS report, the kernel log, transfer-engine errors, debugger output, py-spy top and Flight
Recorder analyzer reports -- read in one call, each reader behind a cheap prefilter.

The same call serves a loose file given to `triage`, a server's log in a bundle
(``ServiceView.beneath``) and the kernel log source, so a reading never depends on where
the text came from. Never raises on arbitrary text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.cuda_gdb import CudaKernel, looks_like_cuda_gdb, parse_cuda_kernels
from pdforensics.parsers.flight_recorder import FrTraceReport, looks_like_fr_trace, parse_fr_trace_text
from pdforensics.parsers.kernel_log import KernelEvent, looks_like_kernel_log, parse_kernel_log
from pdforensics.parsers.linescan import has_any, marks
from pdforensics.parsers.nccl_coll import CollMismatch, read_coll_mismatches
from pdforensics.parsers.nccl_debug import NcclLine, read_nccl_lines
from pdforensics.parsers.nccl_ras import RasReport, parse_ras
from pdforensics.parsers.nccl_watchdog import WatchdogRecord, read_watchdog
from pdforensics.parsers.pyspy_top import PyspyTop, looks_like_pyspy_top, parse_pyspy_top
from pdforensics.parsers.textcache import by_text
from pdforensics.parsers.transfer_engine import TransferError, read_transfer_errors

_GDB_BANNER = linear.compile(r"^GNU gdb \(|^GNU gdb \d|^\(cuda-gdb\)|^NVIDIA \(R\) CUDA Debugger", linear.M)
_GDB_THREAD = linear.compile(r"^Thread \d{1,7} \(|^#\d{1,5} ", linear.M)


@dataclass(frozen=True)
class Beneath:
    watchdog: tuple[WatchdogRecord, ...] = ()
    nccl: tuple[NcclLine, ...] = ()
    ras: RasReport | None = None
    kernel: tuple[KernelEvent, ...] = ()
    driver: str | None = None
    transfer: tuple[TransferError, ...] = ()
    cuda: tuple[CudaKernel, ...] = ()
    fr_trace: tuple[FrTraceReport, ...] = ()
    top: PyspyTop | None = None
    debugger_no_stack: int | None = None  # line of a gdb banner after which no stack came
    coll: tuple[CollMismatch, ...] = ()  # ranks posting different collectives

    def __bool__(self) -> bool:
        return bool(self.watchdog or self.nccl or self.coll or self.ras or self.kernel or self.transfer
                    or self.cuda or self.fr_trace or self.top
                    or self.debugger_no_stack is not None)

    @property
    def lines(self) -> int:
        """How many records were read (for a file's one-line description)."""
        return (len(self.watchdog) + len(self.nccl) + len(self.coll) + len(self.kernel) + len(self.transfer)
                + len(self.cuda) + len(self.fr_trace) + (self.ras is not None)
                + (self.top is not None) + (self.debugger_no_stack is not None))


#: a line _GDB_BANNER matches holds one of these
_GDB_MARKS = marks("GNU gdb ", "(cuda-gdb)", "NVIDIA (R) CUDA Debugger")


def _debugger_no_stack(text: str) -> int | None:
    if not has_any(text, _GDB_MARKS):
        return None
    m = _GDB_BANNER.search(text)
    if m is None or _GDB_THREAD.search(text) is not None:
        return None
    return text.count("\n", 0, m.start()) + 1


@by_text
def read_beneath(text: str) -> Beneath:
    """Every reading below SGLang in ``text`` (an empty Beneath when there is none)."""
    if not text:
        return Beneath()
    klog = parse_kernel_log(text) if looks_like_kernel_log(text) else None
    cuda = parse_cuda_kernels(text) if looks_like_cuda_gdb(text) else ()
    return Beneath(
        watchdog=read_watchdog(text),
        nccl=read_nccl_lines(text),
        coll=read_coll_mismatches(text),
        ras=parse_ras(text),
        kernel=klog.events if klog is not None else (),
        driver=klog.driver if klog is not None else None,
        transfer=read_transfer_errors(text),
        cuda=cuda,
        fr_trace=parse_fr_trace_text(text) if looks_like_fr_trace(text) else (),
        top=parse_pyspy_top(text) if looks_like_pyspy_top(text) else None,
        debugger_no_stack=None if cuda else _debugger_no_stack(text),
    )
