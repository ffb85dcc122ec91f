"""Failures of the host under a collective or a CUDA program, read from the words NCCL and CUDA
print for them:

- torch's NCCL error (``DistBackendError: NCCL error in: ...``, then ``ncclSystemError: <what
  the code means>``, ``Last error:`` and NCCL's own message): the message after ``Last
  error:`` says what failed -- the cause; the two lines naming the code wrap it (consequences);
- NCCL could not create its shared-memory segment in ``/dev/shm`` (a container's default
  64 MB, or less, is too small): the host, ``/dev/shm`` the suspect;
- NVLink SHARP (NVLS) set-up failing: NCCL's own words blame the Fabric Manager or the
  NVSwitches -- the host's fabric service, not the collective;
- CUDA error 802 (``cudaErrorSystemNotReady``, "system not yet initialized"): on an NVSwitch
  machine the fabric manager is not running or does not match the driver. The first report
  is the cause; a later call reporting the same code is a consequence.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import has_any, lines_with, marks

_NOT_READY_WHY = ("CUDA error 802, the system is not ready: on an NVSwitch machine "
                  "nvidia-fabricmanager is not running or does not match the driver")
#: (words any of which names the fault, the suspect, why): failures whose cause is the host
_HOST_FAULTS: tuple[tuple[tuple[str, ...], str | None, str], ...] = (
    (("/dev/shm", "include/shm.h", "shmutils.cc", "shm.cc"), "/dev/shm",
     "NCCL could not create or grow its shared-memory segment in /dev/shm: the host's (or the "
     "container's) /dev/shm is too small or full (docker --shm-size, a tmpfs mount)"),
    (("NVLS", "Fabric Manager", "NVSwitch", "transport/nvls.cc"), None,
     "NVLink SHARP (NVLS) set-up failed: NCCL blames the host's NVSwitch fabric (nvidia-"
     "fabricmanager not running or not matching the driver); NCCL_NVLS_ENABLE=0 avoids NVLS"),
    (("cudaErrorSystemNotReady", "system not yet initialized"), None, _NOT_READY_WHY),
)


def host_fault(text: str) -> tuple[str | None, str] | None:
    """(suspect, why) when ``text`` names a failure of the host under NCCL or CUDA, else None."""
    for words, suspect, why in _HOST_FAULTS:
        if any(w in text for w in words):
            return suspect, why
    return None


_LAST = marks("Last error:")
_WRAPPER = ("NCCL error", "ncclSystemError", "ncclInternalError", "ncclUnhandledCudaError",
            "ncclRemoteError", "ncclInvalidUsage", "ncclInvalidArgument")
_WRAP_REACH = 4  # lines above "Last error:" that torch's wrapper spans
_NOT_A_MESSAGE = ("Exception raised from", "C++ CapturedTraceback", "Traceback")


def _message_after(lines: list[str], no: int) -> tuple[int, str] | None:
    """(number, text) of NCCL's message after the "Last error:" of line ``no`` (1-based): the
    rest of that line, else the next non-blank line."""
    rest = lines[no - 1].split("Last error:", 1)[1].strip()
    if rest:
        return no, rest
    for k in range(no, min(len(lines), no + 2)):
        text = lines[k].strip()
        if text:
            return (None if text.startswith(_NOT_A_MESSAGE) else (k + 1, text))
    return None


@reader("nccl_last_error")
def nccl_last_error(src: Source) -> Iterator[Clue]:
    """torch's NCCL error wrapper and the message NCCL left under "Last error:" (see the
    module docstring)."""
    if not has_any(src.text, _LAST):
        return
    lines = src.text.split("\n")
    base = {"source": src.path, "host": src.host, "role": src.role}
    for no, _line in lines_with(src.text, _LAST):
        found = _message_after(lines, no)
        if found is None:
            continue
        at, message = found
        fault = host_fault(message)
        yield Clue(key="NCCL_LAST_ERROR", label="cause", text=message[:500], line=at,
                   side="host" if fault else "collective", suspect=fault[0] if fault else None,
                   wedge=False, strength=3,
                   why=fault[1] if fault else "NCCL's own message for the error torch raised",
                   **base)  # type: ignore[arg-type]
        for k in range(max(0, no - 1 - _WRAP_REACH), no - 1):
            text = lines[k].strip()
            if any(w in text for w in _WRAPPER):
                yield Clue(key="NCCL_ERROR_WRAPPER", label="consequence", text=text[:500],
                           line=k + 1, side="collective", wedge=False, strength=2,
                           why="torch's wrapper of an NCCL error code: what failed is the "
                               "message under its \"Last error:\"", **base)  # type: ignore[arg-type]


_NOT_READY = marks("cudaErrorSystemNotReady", "system not yet initialized", "returned 802",
                   "error 802")


@reader("cuda_not_ready")
def cuda_not_ready(src: Source) -> Iterator[Clue]:
    """CUDA error 802 (see the module docstring): the first report a cause on the host side,
    its ``-> system not yet initialized`` line with it; later reports consequences."""
    if not has_any(src.text, _NOT_READY):
        return
    found = lines_with(src.text, _NOT_READY)
    first, text = found[0]
    taken = {first}
    follow = next((ln for no, ln in found if no == first + 1 and ln.strip().startswith("->")), None)
    if follow is not None:  # CUDA samples print the error's words on the next line
        text = f"{text.strip()} {follow.strip()}"
        taken.add(first + 1)
    base = {"source": src.path, "host": src.host, "role": src.role, "side": "host",
            "wedge": False}
    yield Clue(key="CUDA_NOT_READY", label="cause", text=text.strip()[:500], line=first,
               strength=3, why=_NOT_READY_WHY, **base)  # type: ignore[arg-type]
    for no, line in found:
        if no not in taken:
            yield Clue(key="CUDA_NOT_READY_AGAIN", label="consequence", text=line.strip()[:500],
                       line=no, strength=2, why="the same CUDA error 802, reported again by a "
                                                "later call", **base)  # type: ignore[arg-type]
