"""Process table and /proc reads: the cheap evidence, read first."""

from __future__ import annotations

from pdforensics.collectors.base import CHEAP, DISCOVERY, MIB, Source, Target, register
from pdforensics.collectors.feeds import CAPTURE_LEVEL, Feed, first_ok
from pdforensics.parsers.proc import PS_ARGV


def _pid(target: Target) -> int:
    assert target.process is not None
    return target.process.pid


PS = register(Source(
    name="ps", description="process table: pid, ppid, state, age, threads, RSS, args",
    scope="host", build=lambda host, t: PS_ARGV, timeout_s=5, max_bytes=8 * MIB,
    priority=DISCOVERY, parser="proc:parse_ps", sample="proc_ps.txt",
    feeds=Feed(f"{CAPTURE_LEVEL}.discovery"),  # parsed/<host>/discovery.json
))

CMDLINE = register(Source(
    name="cmdline", description="exact argv of an SGLang process (/proc/PID/cmdline)",
    scope="process", build=lambda host, t: ("cat", f"/proc/{_pid(t)}/cmdline"),
    reads=lambda host, t: f"/proc/{_pid(t)}/cmdline",
    timeout_s=5, max_bytes=1 * MIB, priority=CHEAP, parser="proc:parse_cmdline",
    sample="proc_cmdline.bin", extension="bin", feeds=Feed("process.cmdline", first_ok),
))

ENVIRON = register(Source(
    name="environ", description="environment of an SGLang process, secrets redacted",
    scope="process", build=lambda host, t: ("cat", f"/proc/{_pid(t)}/environ"),
    reads=lambda host, t: f"/proc/{_pid(t)}/environ",
    timeout_s=5, max_bytes=2 * MIB, priority=CHEAP, parser="proc:parse_environ",
    sample="proc_environ.bin", privileged=True, extension="bin", redact_environ=True,
    feeds=Feed("process.environ", first_ok),
))

CGROUP = register(Source(
    name="cgroup", description="cgroup of a server/router root process (its systemd unit)",
    scope="process", build=lambda host, t: ("cat", f"/proc/{_pid(t)}/cgroup"),
    reads=lambda host, t: f"/proc/{_pid(t)}/cgroup",
    timeout_s=5, max_bytes=64 * 1024, priority=CHEAP, parser="proc:parse_cgroup_unit",
    sample="proc_cgroup_systemd.txt", feeds=Feed(f"{CAPTURE_LEVEL}.discovery"),
))


