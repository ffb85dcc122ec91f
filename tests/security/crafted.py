"""Crafted bundles: a real bundle written by BundleWriter, then one path trick played on it.

Each trick makes the bundle point at something outside itself (a file holding MARKER, the
reader's own /proc/self/environ) or at something that is not a file (a FIFO, a device, an
oversize file). A safe reader refuses every one, naming the entry, and shows nothing of it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from pdforensics.bundle.ondisk import BundleWriter
from pdforensics.model import CommandResult
from pdforensics.redact.redactor import Redactor
from pdforensics.untrusted.read import MAX_FILE_BYTES

MARKER = "OUTSIDE-MARKER-5d1e9c"
T0 = 1_760_000_000.0
PID = 4100
TARGET = f"raw/h1/cmdline.pid{PID}.bin"  # the entry every trick is played on
ARGV = ("python3", "-m", "sglang.launch_server", "--model-path", "/models/m",
        "--disaggregation-mode", "decode", "--port", "30001")


def _result(source: str, out: bytes, at: float) -> CommandResult:
    return CommandResult(host="h1", source=source, argv=("cat", source), exit_status=0,
                         stdout=out, stderr="", duration_s=0.05, started_at=at)


def make_bundle(out: Path, cluster: str = "crafted", at: float = T0, port_flag: str = "30001",
                server_info: bytes | None = None) -> Path:
    """A small, intact bundle: one decode server, its cmdline, environ, log and uname
    (and a /server_info answer with this body, when given)."""
    w = BundleWriter(out, cluster, Redactor(b"k"), at)
    if server_info is not None:
        head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(server_info)}\r\n\r\n".encode()
        w.add(CommandResult(host="h1", source="server_info", argv=("curl",), exit_status=0,
                            stdout=head + server_info, stderr="", duration_s=0.05, started_at=at),
              key="server_info.decode.30001", url="http://127.0.0.1:30001/server_info",
              target={"role": "decode", "port": 30001, "service_kind": "server",
                      "address": "127.0.0.1"})
    proc = {"pid": PID, "kind": "server", "role": "decode", "port": 30001, "rank": None,
            "state": "S", "root_pid": PID}
    svc = {"role": "decode", "port": 30001, "service_kind": "server", "address": "127.0.0.1"}
    argv = (*ARGV[:-1], port_flag)
    w.add(_result("cmdline", b"\0".join(a.encode() for a in argv) + b"\0", at), key=f"cmdline.pid{PID}",
          extension="bin", target=proc)
    w.add(_result("environ", b"CUDA_VISIBLE_DEVICES=0\0NCCL_DEBUG=WARN\0", at), key=f"environ.pid{PID}",
          extension="bin", redaction="environ", target=proc)
    w.add(_result("log_file", b"[2025] INFO server started\n", at), key="log_file.decode.30001", target=svc)
    w.add(_result("uname", b"Linux h1 6.1.0 x86_64\n", at), key="uname")
    w.write_json("parsed/h1/discovery.json", {
        "discovered": True, "notes": [], "missing": [],
        "services": [{"role": "decode", "kind": "server", "port": 30001, "address": "127.0.0.1",
                      "root_pid": PID, "pids": [PID], "metrics_port": None, "unit": None,
                      "log_file": None, "declared": True, "tp_size": 1, "dp_size": 1}],
        "processes": [{"pid": PID, "ppid": 1, "state": "S", "start_epoch": at - 100, "threads": 4,
                       "rss_kb": 1000, "args": " ".join(argv), "kind": "server", "role": "decode",
                       "port": 30001, "rank": None, "root_pid": PID}]})
    return w.finalise({"status": "complete", "partial_reasons": [],
                       "hosts": [{"name": "h1", "address": "local", "reachable": True, "error": None}]})


def outside_file(where: Path) -> Path:
    """A file beside the bundle, as a cmdline that would show MARKER if it were read."""
    f = where / "outside.bin"
    f.write_bytes(b"python3\0-m\0sglang.launch_server\0--model-path\0" + MARKER.encode() + b"\0")
    return f


def _set_path(bundle: Path, value: str) -> None:
    m = json.loads((bundle / "manifest.json").read_text())
    row = next(r for r in m["results"] if r["path"] == TARGET)
    row["path"] = value
    (bundle / "manifest.json").write_text(json.dumps(m))


def _replace(bundle: Path, make: Callable[[Path], None]) -> None:
    (bundle / TARGET).unlink()
    make(bundle / TARGET)


def _symlinked_dir(bundle: Path, outside: Path) -> None:
    away = outside.parent / "elsewhere-h1"
    shutil.move(str(bundle / "raw" / "h1"), away)
    (away / Path(TARGET).name).write_bytes(outside.read_bytes())
    (bundle / "raw" / "h1").symlink_to(away, target_is_directory=True)


def _oversize(p: Path) -> None:
    with p.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is really written


def _device(p: Path) -> None:
    os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # what /dev/zero is


TRICKS: dict[str, Callable[[Path, Path], None]] = {
    "absolute-outside": lambda b, o: _set_path(b, str(o)),
    "absolute-proc-environ": lambda b, o: _set_path(b, "/proc/self/environ"),
    "dotdot": lambda b, o: _set_path(b, f"raw/h1/../../../../{o.name}"),
    "symlink-to-outside": lambda b, o: _replace(b, lambda p: p.symlink_to(o)),
    "symlink-to-proc-environ": lambda b, o: _replace(b, lambda p: p.symlink_to("/proc/self/environ")),
    "relative-symlink-out": lambda b, o: _replace(b, lambda p: p.symlink_to(f"../../../../{o.name}")),
    "symlinked-directory": lambda b, o: _symlinked_dir(b, o),
    "fifo": lambda b, o: _replace(b, lambda p: os.mkfifo(p)),
    "char-device": lambda b, o: _replace(b, _device),
    "oversize": lambda b, o: _replace(b, _oversize),
}


def crafted(tmp: Path, trick: str) -> tuple[Path, Path]:
    """(bundle with `trick` played on it, the outside file it points at)."""
    out = tmp / "bundles"
    bundle = make_bundle(out)
    outside = outside_file(tmp)
    TRICKS[trick](bundle, outside)
    return bundle, outside
