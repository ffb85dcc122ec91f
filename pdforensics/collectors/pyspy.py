"""py-spy dumps of scheduler ranks, tokenizer and detokenizer (last: it pauses the target)."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, STACKS, Source, Target, register
from pdforensics.feeds import Feed, stack_dump
from pdforensics.model import HostSpec

PYSPY_TIMEOUT_S = 20


def build_dump(host: HostSpec, t: Target) -> tuple[str, ...]:
    assert t.process is not None
    argv = [host.py_spy, "dump", "--pid", str(t.process.pid)]
    # py-spy pauses the process to read it; a D/T-state process may never answer ptrace
    if t.process.state in ("D", "T", "t"):
        argv.append("--nonblocking")
    return tuple(argv)


PYSPY_DUMP = register(Source(
    name="pyspy", description="Python stacks of one process (py-spy dump)",
    scope="process", build=build_dump, timeout_s=PYSPY_TIMEOUT_S, max_bytes=4 * MIB,
    priority=STACKS, parser="pyspy:parse_pyspy_text", sample="pyspy_basic.txt",
    privileged=True, feeds=Feed("process.stacks", stack_dump),
))

# which processes of a service get a dump
DUMPED_KINDS = ("scheduler", "detokenizer", "tokenizer", "server", "router")
