"""Client goroutine dumps: recorded into a bundle by `capture --client-dump`, read back by
`analyze` of that bundle (no need to repeat the flag)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from pdforensics.errors import ParseError
from pdforensics.model import CommandResult
from pdforensics.parsers.goroutines import parse_goroutines

if TYPE_CHECKING:
    from pdforensics.analysis.rules.context import ClientDump
    from pdforensics.bundle.ondisk import BundleWriter
    from pdforensics.capture.deadline import Deadline
    from pdforensics.views.loaded import LoadedCapture

#: the host and source a recorded client dump has in the manifest
CLIENT_HOST = "client"
CLIENT_SOURCE = "client_dump"


def client_dump_sidecars(paths: Sequence[str | Path]) -> list[Callable[[BundleWriter, Deadline], None]]:
    """One capture sidecar per file: it copies the file into the bundle (redacted like any
    other text) under raw/client/, recorded in the manifest with its original name."""
    files = [(i, Path(p).name, Path(p).read_bytes())  # read now: a missing file fails early
             for i, p in enumerate(paths)]
    return [partial(_record, i=i, name=name, data=data) for i, name, data in files]


def _record(writer: BundleWriter, _deadline: Deadline, *, i: int, name: str, data: bytes) -> None:
    writer.add(CommandResult(host=CLIENT_HOST, source=CLIENT_SOURCE, argv=("client-dump", name),
                             exit_status=0, stdout=data, stderr="", duration_s=0.0,
                             started_at=time.time()),
               key=f"client_dump_{i}", target={"file": name})


def recorded_client_dumps(capture: LoadedCapture) -> tuple[ClientDump, ...]:
    """The client dumps a bundle holds, parsed; an unreadable one carries its error."""
    from pdforensics.analysis.rules.context import ClientDump  # the rules: not at capture start

    out = []
    for e in capture.results:
        if e.source != CLIENT_SOURCE or e.host != CLIENT_HOST:
            continue
        name = str(e.target.get("file") or e.key)
        try:
            out.append(ClientDump(name, parse_goroutines(capture.bundle.text(e))))
        except ParseError as exc:
            out.append(ClientDump(name, (), str(exc)))
    return tuple(out)
