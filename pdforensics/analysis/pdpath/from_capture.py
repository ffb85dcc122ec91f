"""A loaded capture (a bundle, or the view triage builds of loose files) -> Sources.

Per service: its log (the raw file of the bundle, read through the safe reader), its
/metrics samples, its JSON endpoints and every process's stacks; per client dump its
goroutines. Triage passes its own Sources (the files as given) instead, so the text of a
file no rule reads still reaches the readers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pdforensics.analysis.pdpath.sources import Source
from pdforensics.parsers.frames import ThreadStack
from pdforensics.views.loaded import LoadedCapture, ServiceView

#: manifest sources holding a host's own log text (not a service's)
HOST_LOGS = frozenset({"kernel_log", "kernel_journal"})


def _service_sources(cap: LoadedCapture, svc: ServiceView) -> Iterator[Source]:
    if svc.log_entry is not None and svc.log_entry.path:
        try:
            text = cap.bundle.text(svc.log_entry)
        except Exception:  # a refused or missing raw file: the rules already note it
            text = ""
        if text:
            yield Source(f"raw/{svc.log_entry.path}" if not svc.log_entry.path.startswith("raw/")
                         else svc.log_entry.path, "log", svc.host, svc.role, text=text)
    samples = tuple((m.taken_at, m.snapshot) for m in svc.good_samples if m.snapshot is not None)
    if samples:
        yield Source(f"{svc.label} /metrics", "metrics", svc.host, svc.role, metrics=samples)
    for name, f in sorted(svc.fetches.items()):
        doc = f.json() if f.answered else None
        if doc is not None:
            yield Source(f"{svc.label} /{name}", name, svc.host, svc.role, json=doc,
                         taken_at=f.started_at)
    dumps = tuple(d for p in svc.processes for sd in p.stacks for d in sd.dumps)
    if dumps:
        yield Source(f"{svc.label} stacks", "stacks", svc.host, svc.role, dumps=dumps)


def capture_sources(cap: LoadedCapture,
                    clients: Sequence[tuple[str, tuple[ThreadStack, ...]]] = ()) -> list[Source]:
    """Every source of a capture, services in host order, then the client dumps."""
    out: list[Source] = []
    for svc in cap.services():
        out.extend(_service_sources(cap, svc))
    for e in cap.bundle.results:  # host-level logs (the kernel's: Xid, OOM killer, AER)
        if e.source in HOST_LOGS and e.path:
            try:
                text = cap.bundle.text(e)
            except Exception:
                continue
            if text:
                out.append(Source(e.path, "log", e.host, None, text=text))
    out.extend(Source(path, "goroutines", goroutines=gs) for path, gs in clients if gs)
    return out
