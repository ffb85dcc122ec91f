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
from pdforensics.views.window import window_text

#: manifest sources holding a host's own log text (not a service's)
HOST_LOGS = frozenset({"kernel_log", "kernel_journal"})


def _service_sources(cap: LoadedCapture, svc: ServiceView) -> Iterator[Source]:
    if svc.log_entry is not None and svc.log_entry.path:
        try:
            text = cap.bundle.text(svc.log_entry)
        except Exception:  # a refused or missing raw file: the rules already note it
            text = ""
        if svc.log_history:  # lines before the evidence window are history: not read here
            off = next((h.clock_offset_s for h in cap.hosts if h.name == svc.host), None)
            text = window_text(text, svc.window_start, off)
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


#: host-level results read beneath SGLang besides the kernel logs (read_collective.py)
_HOST_SOURCES = {"nccl_ras": "log", "flight_recorder": "flight_recorder"}


def _host_sources(cap: LoadedCapture) -> Iterator[Source]:
    """The NCCL RAS report and each Flight Recorder file of a host, those from before the
    evidence window left out (history, views/window.py)."""
    old = {path for h in cap.hosts for path, _d in h.fr_history}
    for e in cap.results:
        kind = _HOST_SOURCES.get(e.source)
        if kind is None or not e.path or e.path in old:
            continue
        try:
            data = cap.bundle.read(e)
        except Exception:  # a refused or missing raw file: the rules already note it
            continue
        path = e.path if e.path.startswith("raw/") else f"raw/{e.path}"
        if kind == "flight_recorder" and data.lstrip()[:1] not in (b"{", b"["):
            yield Source(path, kind, e.host, data=data)
        else:
            yield Source(path, kind, e.host, text=data.decode("utf-8", "replace"))


def capture_sources(cap: LoadedCapture,
                    clients: Sequence[tuple[str, tuple[ThreadStack, ...]]] = ()) -> list[Source]:
    """Every source of a capture, services in host order, then the client dumps."""
    out: list[Source] = []
    for svc in cap.services():
        out.extend(_service_sources(cap, svc))
    hosts = {h.name: h for h in cap.hosts}
    for e in cap.bundle.results:  # host-level logs (the kernel's: Xid, OOM killer, AER)
        if e.source in HOST_LOGS and e.path:
            try:
                text = cap.bundle.text(e)
            except Exception:
                continue
            h = hosts.get(e.host)  # the host's window, as the kernel rules judge it
            if h is not None:
                text = window_text(text, h.window_start, h.clock_offset_s)
            if text.strip():
                out.append(Source(e.path, "log", e.host, None, text=text))
    out.extend(_host_sources(cap))
    out.extend(Source(path, "goroutines", goroutines=gs) for path, gs in clients if gs)
    return out
