"""Slurm readers on real scontrol output (tests/data/slurm/), and on arbitrary text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.slurm.hostlist import expand_hostlist
from pdforensics.slurm.job import parse_job, parse_jobs, parse_steps

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"


def _read(name: str) -> str:
    return (DATA / name).read_text()


def test_multi_node_job_expands_its_node_list() -> None:
    job = parse_job(_read("scontrol_job_d_huji.txt"), "1")
    assert job.nodes == ("node-63", "node-64", "node-65")
    assert job.batch_host == "node-63"
    assert (job.state, job.user) == ("RUNNING", "user1")
    assert job.std_out == "/location/with/out.txt" and job.std_err == "/location/with/err.txt"


def test_every_record_of_a_multi_job_dump_is_read() -> None:
    jobs = parse_jobs(_read("scontrol_job_d_huji.txt"))
    assert [j.job_id for j in jobs] == ["1", "2398617", "153291", "134238037", "2423559", "20547",
                                        "1306093", "25686416", "25687666"]
    pending = {j.job_id: j for j in jobs}["134238037"]
    assert pending.state == "PENDING" and pending.reason == "AssocGrpCpuLimit" and pending.nodes == ()
    no_output = {j.job_id: j for j in jobs}["25686416"]
    assert no_output.std_out is None and no_output.nodes == ("node-005",)


def test_cluster_record_keeps_paths_and_the_batch_host() -> None:
    job = parse_job(_read("scontrol_job_d_cea_inti.txt"), "2120436")
    assert job.nodes == ("inti6015",) and job.name == "MPI_PMV"
    assert job.std_out == "/ccc/work/cont001/ocre/tabernera/MPI/MPI_PMV_1.1/sortie_8.o"
    assert job.work_dir == "/ccc/work/cont001/ocre/tabernera/MPI/MPI_PMV_1.1"


def test_lab_job_and_its_steps_from_slurm_22_05() -> None:
    job = parse_job(_read("scontrol_job_d_lab_22.05.txt"), "1")
    assert job.nodes == ("vm",) and job.name == "pdfx-lab"
    assert job.std_out is not None and job.std_out.endswith("slurm-out/slurm-1.out")
    steps = parse_steps(_read("scontrol_step_lab_22.05.txt"))
    assert {s.step_id for s in steps} == {"1.batch", "1.0", "1.1", "1.2"}
    assert {s.name for s in steps} == {"batch", "prefill_w0", "decode_w0", "router_w0"}
    assert all(s.nodes == ("vm",) and s.state == "RUNNING" for s in steps)


def test_missing_job_and_foreign_text_are_parse_errors() -> None:
    with pytest.raises(ParseError, match="no record of job 7"):
        parse_job(_read("scontrol_job_d_cea_inti.txt"), "7")
    with pytest.raises(ParseError, match="expected a record starting with JobId="):
        parse_jobs("slurm_load_jobs error: Invalid job id specified\n")
    assert parse_jobs("") == () and parse_steps("") == ()
    assert parse_steps("No job steps in the system\n") == ()


@pytest.mark.parametrize(("text", "names"), [
    ("node[01-03,07]", ("node01", "node02", "node03", "node07")),
    ("gpu[1-2]-ib[0-1]", ("gpu1-ib0", "gpu1-ib1", "gpu2-ib0", "gpu2-ib1")),
    ("a1,b[9-10]", ("a1", "b9", "b10")),
    ("cn[098-100]", ("cn098", "cn099", "cn100")),
    ("vm", ("vm",)),
    ("(null)", ()),
])
def test_host_lists(text: str, names: tuple[str, ...]) -> None:
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("bad", ["a[", "a]", "a[x]", "a[3-1]", "a,,b", "a b", "n[1-99999999]"])
def test_bad_host_lists_quote_the_text(bad: str) -> None:
    with pytest.raises(ParseError) as info:
        expand_hostlist(bad)
    assert repr(bad)[1:-1] in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab01-9[],( )null", max_size=40))
def test_host_list_never_crashes(text: str) -> None:
    try:
        names = expand_hostlist(text)
    except ParseError:
        return
    assert all(n and "[" not in n and "," not in n for n in names)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_scontrol_readers_never_crash(text: str) -> None:
    for reader in (parse_jobs, parse_steps):
        try:
            reader(text)
        except ParseError:
            pass
