"""File reads that must run as a command (no SFTP, or files only `sudo -n` may read), for all
of a host's targets of one source in one command instead of one `cat` each.

The command is a trusted `python3 -I -S` that only opens the named regular files (O_NONBLOCK,
fstat: a FIFO or a device is refused, as Transport.read_file refuses it) and writes one framed
record per file: a header line ``R <index> <status> <length>`` then <length> bytes (status 0:
the file's bytes; 1: why it could not be read; 2: its first max_bytes, cut at the cap).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pdforensics import linear
from pdforensics.collectors.base import Job
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.base import remote_argv

BATCH_SCRIPT = (
    "import os,stat,sys\n"
    "cap=int(sys.argv[1]);out=sys.stdout.buffer\n"
    "for i,p in enumerate(sys.argv[2:]):\n"
    "    st,b=0,b''\n"
    "    try:\n"
    "        fd=os.open(p,os.O_RDONLY|os.O_NONBLOCK|os.O_NOCTTY)\n"
    "        try:\n"
    "            if not stat.S_ISREG(os.fstat(fd).st_mode): raise OSError(0,'not a regular file: not read')\n"
    "            while len(b)<=cap:\n"
    "                c=os.read(fd,65536)\n"
    "                if not c: break\n"
    "                b+=c\n"
    "        finally: os.close(fd)\n"
    "        if len(b)>cap: st,b=2,b[:cap]\n"
    "    except OSError as e: st,b=1,(e.strerror or str(e)).encode()\n"
    "    out.write(b'R %d %d %d\\n'%(i,st,len(b))+b);out.flush()\n"
)
_HEADER = linear.compile(rb"R (\d{1,9}) ([012]) (\d{1,12})\n")


def batch_argv(host: HostSpec, jobs: Sequence[Job], timeout_s: float) -> tuple[str, ...]:
    """One command reading every job's file (all of one source), wrapped as a job's would be."""
    src = jobs[0].source
    paths = [j.read or "" for j in jobs]
    return remote_argv(("python3", "-I", "-S", "-c", BATCH_SCRIPT, str(src.max_bytes), *paths),
                       timeout_s, sudo=host.sudo and src.privileged)


def split_records(data: bytes, count: int) -> list[tuple[int, bytes] | None]:
    """(status, bytes) per file from the command's output; None for a file whose record did
    not arrive whole (the command timed out or the output is not in this format)."""
    out: list[tuple[int, bytes] | None] = [None] * count
    pos = 0
    while pos < len(data):
        m = _HEADER.match(data, pos)
        if m is None:
            break
        index, status, length = int(m.group(1)), int(m.group(2)), int(m.group(3))
        body = data[m.end():m.end() + length]
        if len(body) < length or index >= count:
            break
        out[index] = (status, body)
        pos = m.end() + length
    return out


def split_result(batch: CommandResult, jobs: Sequence[Job]) -> list[CommandResult]:
    """Each job's own result out of the batch's: the bytes of its file, its status (1 with the
    reason on stderr, as cat gives), the batch's argv, duration and timing."""
    records = split_records(batch.stdout, len(jobs))
    return [_one(batch, job, rec) for job, rec in zip(jobs, records, strict=True)]


def _one(batch: CommandResult, job: Job, rec: tuple[int, bytes] | None) -> CommandResult:
    name = job.source.name
    if rec is None:  # the batch ended before this file's record
        why = batch.error or (None if batch.timed_out else
                              f"batched read gave no record: {_last_line(batch.stderr)}")
        return dataclasses.replace(batch, source=name, stdout=b"", error=why,
                                   exit_status=None if batch.exit_status == 0 else batch.exit_status)
    status, body = rec
    if status == 1:
        return dataclasses.replace(batch, source=name, stdout=b"", exit_status=1, error=None,
                                   timed_out=False, truncated=False,
                                   stderr=f"read {job.read}: {body.decode('utf-8', 'replace')}\n")
    return dataclasses.replace(batch, source=name, stdout=body, stderr="", error=None,
                               exit_status=0 if status == 0 else None, truncated=status == 2,
                               timed_out=False)


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else "no output"
