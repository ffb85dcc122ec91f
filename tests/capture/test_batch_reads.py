"""Batched file reads (one command for a source's targets): the framing, and the real
python3 script run locally against regular, missing, FIFO and capped files."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pdforensics.capture.batch_reads import batch_argv, split_records, split_result
from pdforensics.collectors.base import REGISTRY, Job, Target
from pdforensics.model import HostSpec
from pdforensics.transport.local import LocalTransport

LOCAL = HostSpec(name="here", address="local")


def _jobs(paths: list[str], source: str = "cmdline") -> list[Job]:
    src = REGISTRY[source]
    return [Job(source=src, target=Target(), argv=("cat", p), read=p) for p in paths]


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=5))
def test_split_never_crashes_on_arbitrary_output(data: bytes, count: int) -> None:
    records = split_records(data, count)
    assert len(records) == count


def test_split_keeps_whole_records_and_marks_the_rest_missing() -> None:
    data = b"R 0 0 3\nabcR 1 1 9\nNo accessR 2 0 10\nshort"
    assert split_records(data, 3) == [(0, b"abc"), (1, b"No access"), None]


def test_the_script_reads_each_file_as_read_file_would(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"alpha\0beta\0")
    (tmp_path / "big").write_bytes(b"z" * (2 << 20))  # over cmdline's 1 MiB cap
    os.mkfifo(tmp_path / "fifo")
    paths = [str(tmp_path / n) for n in ("a", "missing", "fifo", "big")] + [f"/proc/{os.getpid()}/cmdline"]
    jobs = _jobs(paths)
    t = LocalTransport(LOCAL)
    batch = t.run("cmdline", batch_argv(LOCAL, jobs, 10.0), 10.0, (4 << 20))
    assert batch.ok, batch
    a, missing, fifo, big, own = split_result(batch, jobs)
    assert a.ok and a.stdout == b"alpha\0beta\0" and a.source == "cmdline"
    assert missing.exit_status == 1 and "No such file" in missing.stderr
    assert fifo.exit_status == 1 and "not a regular file" in fifo.stderr
    assert big.truncated and big.stdout == b"z" * (1 << 20) and not big.ok
    assert own.ok and own.stdout == Path(f"/proc/{os.getpid()}/cmdline").read_bytes()


def test_a_batch_cut_short_leaves_the_rest_without_bytes() -> None:
    jobs = _jobs(["/x", "/y"])
    t = LocalTransport(LOCAL)
    cut = t.run("cmdline", ("printf", "R 0 0 2\\nokR 1 0 99\\npartial"), 5.0, 1000)
    first, second = split_result(cut, jobs)
    assert first.ok and first.stdout == b"ok"
    assert second.stdout == b"" and not second.ok and "no record" in (second.error or "")
