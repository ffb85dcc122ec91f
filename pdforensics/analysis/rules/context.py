"""What every rule reads: the loaded capture plus lazily computed shared views."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pdforensics.analysis.findings import Need
from pdforensics.analysis.metrics_view import Progress, progress
from pdforensics.analysis.stacks import analyze_stacks
from pdforensics.analysis.stacks_model import LabelledDump, StackReport
from pdforensics.parsers.frames import ThreadStack
from pdforensics.views.loaded import LoadedCapture, ServiceView

SERVER_ROLES = ("prefill", "decode", "unified")


@dataclass(frozen=True)
class ClientDump:
    """A client-side goroutine dump given with --client-dump."""

    path: str
    goroutines: tuple[ThreadStack, ...]
    error: str | None = None


@dataclass
class Context:
    capture: LoadedCapture
    client_dumps: Sequence[ClientDump] = ()
    _progress: dict[tuple[str, int, str], Progress] = field(default_factory=dict)

    # -- services ------------------------------------------------------------------------
    def servers(self, role: str | None = None) -> list[ServiceView]:
        return [s for s in self.capture.services()
                if s.kind == "server" and s.role in SERVER_ROLES
                and (role is None or s.role == role)]

    def routers(self) -> list[ServiceView]:
        return [s for s in self.capture.services() if s.kind == "router"]

    def progress(self, svc: ServiceView) -> Progress:
        key = (svc.host, svc.port, svc.role)
        p = self._progress.get(key)
        if p is None:
            p = self._progress[key] = progress(svc)
        return p

    def path_of(self, host: str, key: str) -> str | None:
        """The raw file of result ``key`` on ``host``, relative to the bundle."""
        return self._paths.get((host, key))

    @cached_property
    def _paths(self) -> dict[tuple[str, str], str]:
        return {(e.host, e.key): e.path for e in self.capture.results if e.path}

    # -- stacks --------------------------------------------------------------------------
    @cached_property
    def labelled_dumps(self) -> tuple[LabelledDump, ...]:
        out: list[LabelledDump] = []
        for h in self.capture.hosts:
            for p in h.processes:
                # discovery knows a rank even when its title does not say so
                kind = "scheduler" if p.info.kind == "scheduler" else None
                for sd in p.stacks:
                    for d in sd.dumps:
                        out.append(LabelledDump(d, host=h.name, role=p.info.role,
                                                rank=p.info.rank, taken_at=sd.taken_at,
                                                source=sd.key, kind=kind))
        return tuple(out)

    @cached_property
    def stacks(self) -> StackReport | None:
        dumps = self.labelled_dumps
        return analyze_stacks(dumps) if dumps else None


def _servers_with(ctx: Context, test: Callable[[ServiceView], bool]) -> bool:
    return any(test(s) for s in ctx.servers())


#: each need -> (its check, the reason a rule is skipped when it fails)
NEEDS: dict[Need, tuple[Callable[[Context], bool], str]] = {
    Need.SERVERS: (lambda c: bool(c.servers()), "no SGLang server was found in the capture"),
    Need.METRICS: (lambda c: _servers_with(c, lambda s: bool(s.good_samples)),
                   "no server answered /metrics"),
    Need.SAMPLES2: (lambda c: _servers_with(c, lambda s: c.progress(s).samples >= 2
                                            and c.progress(s).span_s >= 0.9),
                    "fewer than 2 /metrics samples >= 1 s apart from every server "
                    "(movement cannot be judged from one scrape)"),
    Need.PD: (lambda c: bool(c.servers("prefill")) and bool(c.servers("decode")),
              "the capture does not hold both a prefill and a decode server"),
    Need.PROCESSES: (lambda c: any(h.processes for h in c.capture.hosts),
                     "no SGLang processes were listed on any host"),
    Need.STACKS: (lambda c: bool(c.labelled_dumps), "no py-spy stack dump was captured"),
    Need.GPUS: (lambda c: any(h.gpus for h in c.capture.hosts),
                "no GPU state (nvidia-smi) from any host"),
    Need.LOGS: (lambda c: any(s.log_source for s in c.capture.services()),
                "no log (journal or log file) was captured"),
    Need.SERVER_INFO: (lambda c: _servers_with(c, lambda s: "server_info" in s.fetches
                                               or "get_server_info" in s.fetches),
                       "/server_info was not fetched from any server"),
    Need.PROBES: (lambda c: _servers_with(c, lambda s: "health_generate" in s.fetches),
                  "/health_generate was not probed on any server (--no-probes?)"),
    Need.CLOCK: (lambda c: any(h.clock_offset_s is not None for h in c.capture.hosts),
                 "no host clock was read (date +%s.%N)"),
    Need.CLIENT_DUMPS: (lambda c: bool(c.client_dumps), "no --client-dump given"),
    Need.ROUTER: (lambda c: any(r.good_samples or r.router_log for r in c.routers()),
                  "no router /metrics sample or router log was captured"),
    Need.ROW_REMAP: (lambda c: any(h.row_remap for h in c.capture.hosts),
                     "no row remapper state (nvidia-smi -q -d ROW_REMAPPER) from any host"),
    Need.NVLINK: (lambda c: any(h.nvlink for h in c.capture.hosts),
                  "no NVLink error counters (nvidia-smi nvlink -e) from any host"),
    Need.KERNEL_LOG: (lambda c: any(h.kernel is not None for h in c.capture.hosts) or any(
        r.source in ("kernel_log", "kernel_journal") for r in c.capture.results),
                      "the kernel log was not collected"),
    Need.BENEATH: (lambda c: any(s.beneath for s in c.capture.services()) or any(
        h.flight_recorder or h.nccl_ras is not None for h in c.capture.hosts),
                   "no server log, Flight Recorder dump or NCCL RAS report was captured"),
    Need.CUDA: (lambda c: any(p.cuda_kernels or any(d.kind == "cuda-gdb" for sd in p.stacks
                                                    for d in sd.dumps)
                              for h in c.capture.hosts for p in h.processes),
                "no cuda-gdb listing (capture --deep runs cuda-gdb on each rank)"),
}
if set(NEEDS) != set(Need):  # a need without a check (or the reverse) fails at import
    raise ValueError(f"needs without a check: {sorted(set(Need) - set(NEEDS))}")
