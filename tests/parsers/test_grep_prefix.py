"""grep's file-name prefix on lines pasted from several logs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pdforensics.parsers.grep_prefix import grep_prefixed, strip_grep_prefix


def test_file_names_and_line_numbers_are_stripped() -> None:
    text = ("vllm_p3.log:(EngineCore_DP3 pid=546) INFO 08-29 09:12:36 [x.py:1] a\n"
            "logs/LOG1.0.txt:host:1:2 [0] NCCL INFO Broadcast: opCount 0\n"
            "prefill.log.1:1234:ERROR boom\n"
            "not a prefixed line\n")
    assert grep_prefixed(text)
    assert strip_grep_prefix(text).split("\n") == [
        "(EngineCore_DP3 pid=546) INFO 08-29 09:12:36 [x.py:1] a",
        "host:1:2 [0] NCCL INFO Broadcast: opCount 0", "ERROR boom", "not a prefixed line", ""]


def test_a_log_with_few_prefixed_lines_or_other_colons_is_left_alone() -> None:
    text = "\n".join(["INFO start", "see run.log: it says so", "INFO a", "INFO b"])
    assert not grep_prefixed(text)
    # a glog line names its source file with a line number, never a .log
    assert not grep_prefixed("E0101 00:00:00.1 1 file_storage.cpp:12] x\n" * 3)
    assert not grep_prefixed("http://h/x.log: y\n" * 3)


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40),
                max_size=20))
def test_stripping_keeps_every_line_and_only_shortens(lines: list[str]) -> None:
    text = "\n".join(lines)
    out = strip_grep_prefix(text).split("\n")
    assert len(out) == len(text.split("\n"))
    assert all(a.endswith(b) for a, b in zip(text.split("\n"), out, strict=True))


def test_worker_prefix_runs_name_the_process_of_each_line() -> None:
    from pdforensics.parsers.ray_prefix import prefix_runs, process_at

    text = ("plain first\n"
            "(Worker_TP0 pid=1) ERROR a\n"
            "(Worker_TP0 pid=1) ERROR b\n"
            "(Worker_TP1 pid=2) ERROR c\n"
            "continued without a prefix\n")
    runs = prefix_runs(text)
    assert runs == ((2, "Worker_TP0 pid=1"), (4, "Worker_TP1 pid=2"))
    assert [process_at(runs, n) for n in range(1, 6)] == [
        None, "Worker_TP0 pid=1", "Worker_TP0 pid=1", "Worker_TP1 pid=2", "Worker_TP1 pid=2"]
