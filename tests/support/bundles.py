"""The one writer of synthetic bundles: a thin layer over the product's BundleWriter.

Every generator in tests/support (pd_capture, fleet, builder) puts its outputs through
`SynthWriter.put`, so raw/, parsed/, results.jsonl and manifest.json always have the layout
`pdforensics capture` writes. `NoRedactor` keeps values verbatim where a test compares them;
pass a real `Redactor` to get what a redacting capture would have written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pdforensics.bundle.ondisk import BundleWriter
from pdforensics.collectors import REGISTRY
from pdforensics.model import CommandResult
from pdforensics.redact.redactor import NoRedactor, Redactor

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def http(body: str, status: int = 200, ctype: str = "text/plain", reason: str = "OK") -> bytes:
    """An HTTP/1.1 response as the capture stores it (status line, headers, body)."""
    data = body.encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\n"
            f"content-length: {len(data)}\r\n\r\n").encode() + data


class SynthWriter:
    """Results into a BundleWriter; `finish` finalises under the name a test asks for."""

    def __init__(self, out_dir: Path, cluster: str, started_at: float,
                 redactor: Redactor | None = None, name: str | None = None):
        self.bundle = BundleWriter(Path(out_dir), cluster, redactor or NoRedactor(), started_at)
        if name is not None:  # the final directory name (tests address bundles by it)
            self.bundle.name = name

    def put(self, host: str, source: str, key: str, data: bytes, at: float, *,
            ext: str = "txt", url: str | None = None, target: dict[str, Any] | None = None,
            exit_status: int | None = 0, timed_out: bool = False,
            error: str | None = None, duration: float = 0.05, stderr: str = "",
            argv: tuple[str, ...] | None = None) -> None:
        """One collector's result: `argv` defaults to the source name (none for a URL);
        redacted as its source declares, as a capture does."""
        command = () if url else (argv if argv is not None else (source,))
        self.bundle.add(CommandResult(host=host, source=source, argv=command,
                                      exit_status=exit_status, stdout=data, stderr=stderr,
                                      duration_s=duration, started_at=at, timed_out=timed_out,
                                      error=error), key=key, url=url, extension=ext,
                        redaction=REGISTRY[source].redaction if source in REGISTRY else "text",
                        target=target)

    def discovery(self, host: str, processes: list[dict[str, Any]],
                  services: list[dict[str, Any]], discovered: bool = True) -> None:
        """parsed/<host>/discovery.json, as the capture's discovery step writes it."""
        self.bundle.write_json(f"parsed/{host}/discovery.json", {
            "discovered": discovered, "notes": [], "missing": [], "processes": processes,
            "services": services})

    def finish(self, manifest: dict[str, Any]) -> Path:
        """Finalise: manifest.json (the fields given override the writer's), renamed in place."""
        return self.bundle.finalise(manifest)


def write_analysis(bundle: Path, verdict: str) -> None:
    """A minimal analysis.json next to the evidence (what `analyze` adds to a bundle)."""
    (bundle / "analysis.json").write_text(json.dumps(
        {"verdict": verdict, "summary": f"{verdict}: synthetic", "findings": []}))


def gathered(out_dir: Path, source: str | None = None) -> bool:
    """A capture writing under out_dir has a result (of `source`, if named) that came back
    clean in its temporary bundle: the capture is under way, past discovery for `ps`."""
    for log in Path(out_dir).glob(".*.tmp/results.jsonl"):
        for line in log.read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except ValueError:  # the line being written
                continue
            if row.get("exit_status") == 0 and source in (None, row.get("source")):
                return True
    return False


def wait_gathered(out_dir: Path, source: str | None = None, timeout_s: float = 60.0) -> bool:
    """Wait until `gathered(out_dir, source)`; False when it never came."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if gathered(out_dir, source):
            return True
        time.sleep(0.05)
    return False
