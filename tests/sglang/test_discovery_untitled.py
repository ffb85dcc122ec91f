"""Ranks found without process titles (issue #14): children of the launch_server process by
parent pid and command line; the sglang::scheduler_* title is a hint only."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.proc import parse_ps
from pdforensics.sglang.discovery import Discovery, discover

DATA = Path(__file__).parent.parent / "data"
SERVER = "/usr/bin/python3 -m sglang.launch_server --port 30000 --tp-size {tp} --enable-metrics"
SPAWN = ("/usr/bin/python3 -c from multiprocessing.spawn import spawn_main; "
         "spawn_main(tracker_fd={fd}, pipe_handle={h}) --multiprocessing-fork")
TRACKER = "/usr/bin/python3 -c from multiprocessing.resource_tracker import main;main(5)"


def ranks(d: Discovery, role: str) -> dict[str, int]:
    svc = next(s for s in d.services if s.role == role)
    return {p.rank or "": p.pid for p in d.processes
            if p.root_pid == svc.root_pid and p.kind == "scheduler"}


def kinds(d: Discovery) -> dict[int, str]:
    return {p.pid: p.kind for p in d.processes}


def test_lab_without_titles_spawned_ranks() -> None:
    """The lab run with titles off (real `ps -eww -o pid=,ppid=,...` output): spawned ranks."""
    d = discover(parse_ps((DATA / "proc_ps_untitled_spawn.txt").read_text()), now=1000.0)
    assert sorted(s.role for s in d.services) == ["decode", "prefill", "router"]
    assert ranks(d, "decode") == {"TP0": 23434, "TP1": 23440}
    assert ranks(d, "prefill") == {"TP0": 23435, "TP1": 23438}
    k = kinds(d)
    assert k[23441] == "other" and k[23443] == "other"  # the detokenizers, started last
    assert k[23432] == "other" and k[23433] == "other"  # the resource trackers


def test_lab_without_titles_forked_ranks() -> None:
    """setproctitle missing, fork start method: the ranks are copies of the server's line."""
    d = discover(parse_ps((DATA / "proc_ps_untitled_fork.txt").read_text()), now=1000.0)
    assert ranks(d, "prefill") == {"TP0": 15245, "TP1": 15246}
    assert ranks(d, "decode") == {"TP0": 15254, "TP1": 15255}
    assert kinds(d)[15247] == "other" and kinds(d)[15258] == "other"


def test_titles_still_name_the_ranks() -> None:
    d = discover(parse_ps((DATA / "proc_ps.txt").read_text()), now=1000.0)
    assert set(ranks(d, "decode")) == {"TP0", "TP1"}


def table(*rows: tuple[int, int, int, str]) -> str:
    return "\n".join(f"{pid} {ppid} S {age} 3 1000 {args}" for pid, ppid, age, args in rows)


def test_a_dead_rank_leaves_the_detokenizer_out() -> None:
    text = table((10, 1, 100, SERVER.format(tp=2)), (11, 10, 99, TRACKER),
                 (12, 10, 99, SPAWN.format(fd=6, h=8)),  # TP0; TP1 (13) is gone
                 (14, 10, 99, SPAWN.format(fd=6, h=12)))  # detokenizer
    d = discover(parse_ps(text), now=1000.0)
    assert ranks(d, "unified") == {"TP0": 12}
    assert kinds(d)[14] == "other"


def test_data_parallel_controller_ranks() -> None:
    server = SERVER.format(tp=2) + " --dp-size 2"
    text = table((10, 1, 100, server), (12, 10, 99, SPAWN.format(fd=6, h=8)),  # controller
                 (20, 12, 98, SPAWN.format(fd=7, h=9)), (21, 12, 98, SPAWN.format(fd=7, h=10)),
                 (22, 12, 98, SPAWN.format(fd=7, h=11)), (23, 12, 98, SPAWN.format(fd=7, h=12)),
                 (14, 10, 97, SPAWN.format(fd=6, h=12)))  # detokenizer
    d = discover(parse_ps(text), now=1000.0)
    assert ranks(d, "unified") == {"DP0_TP0": 20, "DP0_TP1": 21, "DP1_TP0": 22, "DP1_TP1": 23}
    assert kinds(d)[12] == "other" and kinds(d)[14] == "other"


def test_forkserver_children_are_the_ranks() -> None:
    fs = "/usr/bin/python3 -c from multiprocessing.forkserver import main; main(9, 10, ['sglang'])"
    text = table((10, 1, 100, SERVER.format(tp=2)), (11, 10, 99, fs),
                 (12, 11, 99, fs), (13, 11, 99, fs), (14, 11, 98, fs))
    d = discover(parse_ps(text), now=1000.0)
    assert ranks(d, "unified") == {"TP0": 12, "TP1": 13}
    assert kinds(d)[11] == "other" and kinds(d)[14] == "other"


def test_second_node_ranks_are_numbered_from_its_offset() -> None:
    server = SERVER.format(tp=4) + " --nnodes 2 --node-rank 1"
    text = table((10, 1, 100, server), (12, 10, 99, SPAWN.format(fd=6, h=8)),
                 (13, 10, 99, SPAWN.format(fd=6, h=10)), (14, 10, 99, SPAWN.format(fd=6, h=12)))
    assert ranks(discover(parse_ps(text), now=1000.0), "unified") == {"TP2": 12, "TP3": 13}


def test_unrelated_children_are_not_ranks() -> None:
    text = table((10, 1, 100, SERVER.format(tp=1)), (12, 10, 99, "/bin/sh -c nvidia-smi"),
                 (13, 10, 99, SPAWN.format(fd=6, h=8)), (14, 10, 99, SPAWN.format(fd=6, h=10)))
    d = discover(parse_ps(text), now=1000.0)
    assert ranks(d, "unified") == {"TP0": 13}
    assert kinds(d)[12] == "other"
