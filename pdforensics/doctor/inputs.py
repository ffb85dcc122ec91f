"""What the checks read: the light capture, the cluster file, and the probes' answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.doctor.probes import probe_json
from pdforensics.model import ClusterSpec, HostSpec
from pdforensics.views.loaded import HostView, LoadedCapture


@dataclass(frozen=True)
class Probe:
    """One probe's result on one host: the manifest entry, its text and its JSON (if any)."""

    entry: ResultEntry
    text: str
    doc: dict[str, Any] | None

    @property
    def failure(self) -> str:
        e = self.entry
        lines = e.stderr.strip().splitlines()
        return e.error or (lines[-1][:200] if lines else
                           "timed out" if e.timed_out else f"exit status {e.exit_status}")


@dataclass(frozen=True)
class DoctorInput:
    capture: LoadedCapture
    cluster: ClusterSpec
    probes: dict[str, dict[str, Probe]]  # host -> probe source name -> its result
    evidence_dirs: tuple[Path, ...] = field(default=())  # where bundles and the store go

    def spec(self, host: str) -> HostSpec | None:
        return next((h for h in self.cluster.hosts if h.name == host), None)

    def probe(self, host: str, name: str) -> Probe | None:
        return self.probes.get(host, {}).get(name)

    @property
    def hosts(self) -> tuple[HostView, ...]:
        return self.capture.hosts


def read_probes(capture: LoadedCapture, names: frozenset[str]) -> dict[str, dict[str, Probe]]:
    """Each host's probe results, read from the bundle like any other result."""
    out: dict[str, dict[str, Probe]] = {}
    for e in capture.bundle.results:
        if e.source not in names:
            continue
        text = capture.bundle.text(e) if e.path else ""
        out.setdefault(e.host, {})[e.source] = Probe(e, text, probe_json(text) if e.ok else None)
    return out
