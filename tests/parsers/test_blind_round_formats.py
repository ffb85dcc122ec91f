"""Formats the fresh blind sets of 6 December showed the readers missing: Ray's worker-log
prefix, py-spy frames pasted without their Thread header, torch's c10 log lines and C++
stacks, the kernel's OOM reaper, GSP RPC timeouts, Mooncake's warning before an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.parsers.kernel_log import GSP, OOM_INVOKED, OOM_KILL, OOM_REAPED, XID, parse_kernel_log
from pdforensics.parsers.pyspy import parse_pyspy_text
from pdforensics.parsers.ray_prefix import ray_prefixed, strip_ray_prefix
from pdforensics.parsers.transfer_engine import device_of, read_transfer_errors
from pdforensics.triage.logs import looks_like_log
from pdforensics.triage.read import detect_kind

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def test_ray_prefixes_are_stripped_line_for_line() -> None:
    text = ("(RolloutRayActor pid=3549160) [2025-08-05 12:15:15 TP1] Registering 1679 cuda graph\n"
            "plain line\n"
            "(pid=42, ip=10.0.0.2) Decode batch. #running-req: 1\n"
            "(RolloutRayActor pid=3549162) ")
    assert ray_prefixed(text)
    out = strip_ray_prefix(text).split("\n")
    assert out == ["[2025-08-05 12:15:15 TP1] Registering 1679 cuda graph", "plain line",
                   "Decode batch. #running-req: 1", ""]
    assert not ray_prefixed("(not a prefix) pid=3\n(x pid=) y\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=60),
                min_size=1, max_size=30),
       st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True), st.integers(1, 10**9))
def test_property_ray_strip_keeps_every_line_and_only_drops_the_prefix(
        lines: list[str], actor: str, pid: int) -> None:
    text = "\n".join(f"({actor} pid={pid}) {ln}" for ln in lines)
    out = strip_ray_prefix(text).split("\n")
    assert len(out) == len(lines) and out == lines


def test_pyspy_frames_without_a_header_are_one_thread_and_one_frame_is_still_an_error() -> None:
    text = (FIELD / "pyspy/ray45822-idle-actor-fetch-function-stack.txt").read_text()
    (d,) = parse_pyspy_text(text)
    (t,) = d.threads
    assert t.thread_id == "?" and t.frames[0].function == "fetch_registered_method"
    assert detect_kind(text) == "stacks"
    with pytest.raises(ParseError, match="frame outside a thread"):
        parse_pyspy_text("    foo (bar.py:1)\n")


@pytest.mark.parametrize("rel", ["nccl/sglang2561-slurm-tcpstore-connect-timeout.log",
                                 "nccl/sglang20859-hicache-tp16-tcpstore-reset.log",
                                 "nccl/pytorch126275-pg-not-destroyed-warning-control.log"])
def test_torch_c10_lines_and_their_cpp_stacks_are_a_log(rel: str) -> None:
    text = (FIELD / rel).read_text()
    assert looks_like_log(text, False) and detect_kind(text) in ("log", "stacks")


def test_the_oom_reaper_and_the_kill_are_two_events_of_one_pid() -> None:
    log = parse_kernel_log((FIELD / "kernel/ert7797-oom-killer-perl-repro.log").read_text())
    kinds = [(e.kind, e.suspect) for e in log.events]
    assert kinds == [(OOM_INVOKED, "pool"), (OOM_KILL, "1440763 (perl)"),
                     (OOM_REAPED, "1440763 (perl)")]


def test_gsp_timeout_lines_close_together_are_one_event_before_the_xid() -> None:
    log = parse_kernel_log((FIELD / "kernel/opengpukm446-gsp-rpc-timeout-xid154.log").read_text())
    assert [e.kind for e in log.events] == [GSP, XID]
    assert "Back to back GSP RPC timeout" in log.events[0].text
    assert "rpcRecvPoll timedout" in log.events[0].text


def test_a_mooncake_warning_counts_only_right_before_an_error() -> None:
    w = "W0302 09:15:07.980530     7 rdma_context.cpp:581] No suitable GID found on mlx5_bond_1/"
    e = "E0302 09:15:07.980787     7 rdma_context.cpp:81] Failed to open device mlx5_bond_1"
    assert [x.level for x in read_transfer_errors(f"{w}\n{e}\n")] == ["W", "E"]
    assert read_transfer_errors(f"{w}\n" + "x\n" * 10 + f"{e}\n")[0].level == "E"
    assert read_transfer_errors(f"{w}\n") == ()
    assert device_of(w) == "mlx5_bond_1" and device_of("mlx5dv_devx_obj_create(CQ) failed") is None


def test_a_plain_gdb_bt_is_the_current_thread_and_a_session_switch_names_the_next() -> None:
    from pdforensics.parsers.native_stacks import parse_gdb

    (d,) = parse_gdb((FIELD / "gdb/pytorch95944-gdb-libcuda-memcpy-item-hang.txt").read_text())
    assert [t.thread_id for t in d.threads] == ["?"] and len(d.threads[0].frames) > 10
    (s,) = parse_gdb((FIELD / "gdb/thunder462-gdb-threadpool-and-ucx-fuse-read.txt").read_text())
    ids = [t.thread_id for t in s.threads]
    assert ids[0] == "?" and "LWP 51477" in ids
    # the frame gdb prints on switching, then the same thread's bt: one thread, not two
    assert ids.count("LWP 51477") == 1
    assert next(t for t in s.threads if t.thread_id == "LWP 51477").frames[0].function == "read"


def test_ray_dedup_suffixes_are_dropped_with_the_prefix() -> None:
    text = ("(WorkerDict pid=443, ip=10.71.253.130)   File \"/x/loader.py\", line 370, in load_model"
            " [repeated 12x across cluster]\n(WorkerDict pid=443, ip=10.71.253.130)     y()\n")
    assert strip_ray_prefix(text).split("\n")[:2] == [
        '  File "/x/loader.py", line 370, in load_model', "    y()"]


def test_a_file_sniffed_as_a_dump_but_unreadable_as_one_is_read_as_its_log() -> None:
    from pdforensics.analysis.stacks_load import sniff_format
    from pdforensics.triage.read import read_path, read_text

    text = ("[2025-01-01 10:00:00] Scheduler hit an exception: Traceback (most recent call last):\n"
            "[2025-01-01 10:00:01] the rest of the traceback was not logged\n"
            "[2025-01-01 10:00:02] Received sigquit from a child process.\n")
    assert sniff_format(text) == "traceback"
    art = read_text("x.log", text, len(text))
    assert art.usable and art.kind == "log"
    # the traceback behind compose's and FastChat's prefixes is read as the stack it is
    art = read_path(str(FIELD / "traceback/fastchat3498-compose-prefix-sglang-runtime.log"))
    assert art.usable and art.kind == "stacks" and art.threads >= 1
