"""The planner's follow-ups beneath SGLang (collectors/beneath.py):

- Flight Recorder dumps: each SGLang process's environment names the dump prefix
  (``TORCH_FR_DUMP_TEMP_FILE`` / ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``, torch's default
  ``/tmp/nccl_trace_rank_`` when a buffer size turns the recorder on); the prefix's directory is
  listed (``find``, regular files only) and each ``<prefix><rank>`` file read like any other
  file, size-capped, at most FR_MAX_FILES per prefix. The default prefix is listed once per
  host with servers even when no environment names it (the ranks may be gone).
- ``--nccl-ras``: ``ncclras`` once per host, at the address the ranks' ``NCCL_RAS_ADDR`` names
  (default localhost:28028), unless their environment turns RAS off (``NCCL_RAS_ENABLE=0``).
- ``--deep``: cuda-gdb's ``info cuda kernels`` on each scheduler rank, after its last py-spy
  dump (never two debuggers on one process at once), each under a strict timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.collectors import beneath, proc, pyspy
from pdforensics.collectors.base import Job, Target
from pdforensics.model import CommandResult, HostSpec, ProcessInfo
from pdforensics.parsers.flight_recorder import parse_fr_list
from pdforensics.parsers.proc import parse_environ

if TYPE_CHECKING:
    from pdforensics.capture.planner import PlanOptions
    from pdforensics.sglang.discovery import Discovery

MakeJob = Callable[..., Job]


@dataclass
class BeneathPlan:
    """What one host's planner already planned beneath SGLang."""

    host: HostSpec
    options: PlanOptions
    make: MakeJob
    prefixes: set[str] = field(default_factory=set)
    files: int = 0
    ras: bool = False
    deep: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def after_discovery(self, d: Discovery) -> list[Job]:
        jobs: list[Job] = []
        servers = any(s.kind == "server" for s in d.services)
        if self.options.flight_recorder and servers:
            jobs += self._list(beneath.FR_DEFAULT_PREFIX)
        if self.options.deep and not self.options.stacks:
            jobs += [self._deep(p) for p in d.processes if p.kind == "scheduler"]
        return [j for j in jobs if j is not None]

    def on_result(self, job: Job, result: CommandResult) -> list[Job]:
        name = job.source.name
        if name == proc.ENVIRON.name and result.ok and job.target.process is not None:
            return self._from_environ(job.target.process, result.stdout)
        if name == beneath.FLIGHT_RECORDER_LIST.name and result.ok:
            return self._reads(parse_fr_list(result.stdout.decode("utf-8", "replace")),
                               job.target.path)
        last = max(1, self.options.stack_dumps)
        if (name == pyspy.PYSPY_DUMP.name and self.options.deep and job.target.process is not None
                and job.target.process.kind == "scheduler" and (job.target.sample or 1) >= last):
            return [self._deep(job.target.process)]
        return []

    # -- the three follow-ups ---------------------------------------------------------------
    def _from_environ(self, p: ProcessInfo, raw: bytes) -> list[Job]:
        env = dict(parse_environ(raw.decode("utf-8", "surrogateescape")))
        jobs: list[Job] = []
        if self.options.flight_recorder and p.kind in ("scheduler", "server"):
            on = any(_positive(env.get(v)) for v in beneath.FR_BUFFER_VARS)
            named = [env[v] for v in beneath.FR_PREFIX_VARS if env.get(v)]
            for prefix in named or ([beneath.FR_DEFAULT_PREFIX] if on else []):
                jobs += self._list(prefix)
        if self.options.nccl_ras and not self.ras and p.kind == "scheduler":
            self.ras = True
            if env.get("NCCL_RAS_ENABLE", "").strip() == "0":
                self.notes.append("--nccl-ras: the ranks' environment turns NCCL RAS off "
                                  "(NCCL_RAS_ENABLE=0): not queried")
            else:
                jobs.append(self.make(self.host, beneath.NCCL_RAS,
                                      Target(path=_ras_addr(env.get("NCCL_RAS_ADDR", "")))))
        return jobs

    def _list(self, prefix: str) -> list[Job]:
        prefix = prefix.strip()
        if not prefix.startswith("/") or "\n" in prefix or prefix in self.prefixes or len(prefix) > 1024:
            return []
        self.prefixes.add(prefix)
        return [self.make(self.host, beneath.FLIGHT_RECORDER_LIST, Target(path=prefix))]

    def _reads(self, paths: tuple[str, ...], prefix: str) -> list[Job]:
        mine = [p for p in paths if p.startswith(prefix) and p[len(prefix):].isdigit()]
        jobs = []
        for path in mine[:beneath.FR_MAX_FILES]:
            self.files += 1
            jobs.append(self.make(self.host, beneath.FLIGHT_RECORDER,
                                  Target(path=path, sample=self.files)))
        if len(mine) > beneath.FR_MAX_FILES:
            self.notes.append(f"Flight Recorder: {len(mine)} dumps under {prefix}, the first "
                              f"{beneath.FR_MAX_FILES} read")
        return jobs

    def _deep(self, p: ProcessInfo) -> Job:
        self.deep.add(p.pid)
        return self.make(self.host, beneath.CUDA_GDB, Target(process=p))


def deep_record(entries: Sequence[ResultEntry]) -> dict[str, Any]:
    """What --deep did, for the manifest: the tool, its limit, and each rank's pause (the
    time cuda-gdb held it: attach, read, detach)."""
    rows = [e for e in entries if e.source == beneath.CUDA_GDB.name]
    return {
        "enabled": True, "tool": "cuda-gdb --batch -p PID -ex 'info cuda kernels'",
        "timeout_s_per_rank": beneath.DEEP_TIMEOUT_S,
        "pause": "each rank is stopped while cuda-gdb attaches and reads it",
        "ranks": [{"host": e.host, "pid": e.target.get("pid"), "rank": e.target.get("rank"),
                   "paused_s": round(e.duration_s, 3), "ok": e.ok,
                   "error": e.error or ("timed out" if e.timed_out else None)} for e in rows],
        "max_pause_s": round(max((e.duration_s for e in rows), default=0.0), 3),
    }


def _positive(value: str | None) -> bool:
    try:
        return value is not None and int(value.strip()) > 0
    except ValueError:
        return False


def _ras_addr(value: str) -> str:
    """``host:port`` of NCCL_RAS_ADDR when it looks like one, else "" (ncclras's default)."""
    host, _, port = value.strip().rpartition(":")
    if port.isdigit() and len(port) <= 5 and host and all(c.isalnum() or c in ".-[]:" for c in host):
        return f"{host}:{port}"
    return ""
