"""cuda-gdb listings: ``info cuda kernels`` and ``info cuda threads``.

``info cuda kernels`` lists the kernels active on the GPU, one row each::

      Kernel Parent Dev Grid Status   SMs Mask    GridDim BlockDim Invocation
    *      5      -   0    6 Active 0x00000002 (4801,1,1) (64,1,1) render(nthreads=307200, ...)

(newer releases split the last column into ``Name Args``). ``info cuda threads`` lists ranges
of CUDA threads with the source line their PC is at, under ``Kernel N`` headers. A kernel of
NCCL (``ncclKernel_*`` / ``ncclDevKernel_*``, or PCs inside ``nccl/src/.../device/``) that is
active while the process is stuck is a collective waiting for its peers: the GPU side of a
rank that got there while another rank did not. Both listings are returned as dumps of kind
``cuda-gdb`` (one "thread" per kernel or per thread range), so `stacks` and the stack rules
read them like any other dump. Never raises on arbitrary text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.frames import Frame, ProcessDump, ThreadStack

_KERNEL_ROW = linear.compile(r"^\s{0,8}(\*)?\s{0,8}(\d{1,9})\s{1,8}(-|\d{1,9})\s{1,8}(\d{1,4})\s{1,8}"
                         r"(-?\d{1,12})\s{1,8}(\w{1,20})\s{1,8}(0x[0-9a-fA-F]{1,40})\s{1,8}"
                         r"(\(\d{1,9},\d{1,9},\d{1,9}\))\s{1,8}(\(\d{1,9},\d{1,9},\d{1,9}\))\s{1,8}(.*)$")
_THREAD_ROW = linear.compile(r"^\s{0,8}(\*)?\s{0,8}(\(\d{1,9},\d{1,9},\d{1,9}\))\s{1,8}"
                         r"(\(\d{1,9},\d{1,9},\d{1,9}\))\s{1,8}(\(\d{1,9},\d{1,9},\d{1,9}\))\s{1,8}"
                         r"(\(\d{1,9},\d{1,9},\d{1,9}\))\s{1,8}(\d{1,12})\s{1,8}(0x[0-9a-fA-F]{1,16})"
                         r"\s{1,8}(\S{1,1000})\s{1,8}(\d{1,9})\s*$")
_LISTING_HEAD = linear.compile(r"^\s{0,8}(?:Kernel Parent Dev Grid Status|BlockIdx ThreadIdx To BlockIdx)",
                           linear.M)
_KERNEL_HEAD = linear.compile(r"^\s{0,8}Kernel (\d{1,9})\s*$")
_NCCL_NAME = linear.compile(r"^nccl\w{0,10}Kernel|^ncclDevKernel|^nccl_?\w{0,40}(?:AllReduce|AllGather|"
                        r"ReduceScatter|Broadcast|SendRecv|Reduce)", linear.I)
_NCCL_FILE = linear.compile(r"nccl/src/(?:collectives/)?device/|/nccl/.{0,200}\.(?:h|cuh|cu)$")


@dataclass(frozen=True)
class CudaKernel:
    """One ``info cuda kernels`` row (or, from ``info cuda threads``, one kernel's PCs)."""

    kernel: int
    device: int | None
    status: str  # Active, ...
    grid: str  # "(240,1,1)"
    block: str
    name: str  # the invocation's function name ("" when only PCs are known)
    invocation: str  # as printed
    files: tuple[str, ...] = ()  # source files of the threads' PCs
    threads: int = 0  # CUDA threads the listing counted

    @property
    def collective(self) -> bool:
        """An NCCL collective kernel (by name, or by where its threads' PCs are)."""
        return bool(_NCCL_NAME.search(self.name)) or any(_NCCL_FILE.search(f) for f in self.files)


def looks_like_cuda_gdb(text: str) -> bool:
    head = text[:200000]
    return "info cuda" in head or bool(_LISTING_HEAD.search(head))


def parse_cuda_kernels(text: str) -> tuple[CudaKernel, ...]:
    """Every kernel of ``info cuda kernels`` and ``info cuda threads`` listings in ``text``."""
    out: list[CudaKernel] = []
    current: int | None = None
    rows: dict[int, list[linear.Match[str]]] = {}
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        k = _KERNEL_ROW.match(line)
        if k is not None:
            inv = k.group(10).strip()
            name = inv.split("(", 1)[0].split(" ", 1)[0].split("<", 1)[0]
            out.append(CudaKernel(int(k.group(2)), int(k.group(4)), k.group(6), k.group(8),
                                  k.group(9), name, inv[:500]))
            continue
        h = _KERNEL_HEAD.match(line)
        if h is not None:
            current = int(h.group(1))
            continue
        t = _THREAD_ROW.match(line)
        if t is not None:
            rows.setdefault(current if current is not None else -1, []).append(t)
    for kid, ms in rows.items():
        files = tuple(dict.fromkeys(m.group(8) for m in ms))
        known = next((i for i, kn in enumerate(out) if kn.kernel == kid), None)
        count = sum(int(m.group(6)) for m in ms)
        if known is not None:
            kn = out[known]
            out[known] = CudaKernel(kn.kernel, kn.device, kn.status, kn.grid, kn.block, kn.name,
                                    kn.invocation, files, count)
        else:
            out.append(CudaKernel(kid, None, "Active", "", "", "", "", files, count))
    return tuple(out)


def cuda_dump(text: str) -> tuple[ProcessDump, ...]:
    """The listings as one dump: one thread per kernel row, one per CUDA thread range."""
    threads: list[ThreadStack] = []
    current = "?"
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        k = _KERNEL_ROW.match(line)
        if k is not None:
            inv = k.group(10).strip()
            name = inv.split("(", 1)[0].split(" ", 1)[0] or "?"
            threads.append(ThreadStack(f"kernel {k.group(2)}", f"dev {k.group(4)} grid {k.group(5)}",
                                       k.group(6).lower(), (Frame(name[:300], "", None, True),)))
            continue
        h = _KERNEL_HEAD.match(line)
        if h is not None:
            current = h.group(1)
            continue
        t = _THREAD_ROW.match(line)
        if t is not None:
            tid = f"kernel {current} block {t.group(2)} threads {t.group(3)}-{t.group(5)}"
            threads.append(ThreadStack(tid, None, "active", (Frame(
                t.group(7), t.group(8)[:500], int(t.group(9)), True),), count=int(t.group(6))))
    return (ProcessDump("cuda-gdb", tuple(threads)),) if threads else ()
