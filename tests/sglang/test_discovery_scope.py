"""Scope on shared nodes: another user's SGLang services are listed, not captured; --port
limits discovery; the router is reached where it listens; ps carries each process's uid."""

from __future__ import annotations

from pdforensics.parsers.proc import parse_ps
from pdforensics.sglang.discovery import discover, login_uid

PS = """\
    1     0 Ss   900  1   100 0 /sbin/init
  500     1 Ss   800  1   100 0 sshd: /usr/sbin/sshd -D [listener]
  600   500 Ss    10  1   100 0 sshd: ops [priv]
  601   600 S     10  1   100 1000 sshd: ops@notty
  602   601 Ss    10  1   100 1000 bash -c python3 -I -S runner
  603   602 S     10  1   100 0 sudo -n python3 -I -S runner
  604   603 S     10  1   100 0 ps -eww -o pid=,ppid=,stat=,etimes=,nlwp=,rss=,uid=,args=
 1000     1 Sl   700 40  9000 1000 python3 -m sglang.launch_server --port 30001 --disaggregation-mode decode
 1001  1000 Sl   690 20  9000 1000 sglang::scheduler_TP0
 2000     1 Sl   700 40  9000 1001 python3 -m sglang.launch_server --port 31001 --disaggregation-mode decode
 2001  2000 Sl   690 20  9000 1001 sglang::scheduler_TP0
 3000     1 Sl   600  8  2000 1000 smg::router
"""


def test_ps_has_the_uid_and_old_tables_still_read() -> None:
    t = parse_ps(PS)
    assert t.by_pid()[2000].uid == 1001 and t.by_pid()[2000].args.startswith("python3 -m")
    old = parse_ps(" 7 1 S 5 1 10 python3 -m sglang.launch_server --port 1\n")
    assert old.rows[0].uid is None and old.rows[0].args.startswith("python3 -m sglang")


def test_the_login_user_is_found_above_our_own_ps_even_under_sudo() -> None:
    assert login_uid(parse_ps(PS)) == 1000


def test_another_users_servers_are_listed_not_captured() -> None:
    listen = {30001: {1000}, 31001: {2000}, 30000: {3000}, 29000: {3000}}
    d = discover(parse_ps(PS), listen_pids=listen, all_users=False,
                 listen_addresses={30000: "10.1.2.3"})
    assert [s.port for s in d.services] == [30001, 30000]
    ((svc, why),) = d.out_of_scope
    assert svc.port == 31001 and svc.owner_uid == 1001 and "uid 1001" in why and "--all-users" in why
    assert {p.pid for p in d.processes} == {1000, 1001, 3000}  # none of the other user's
    router = next(s for s in d.services if s.kind == "router")
    assert router.address == "10.1.2.3"  # where it listens (its title hid --host)
    everyone = discover(parse_ps(PS), listen_pids=listen, all_users=True)
    assert len(everyone.services) == 3 and not everyone.out_of_scope


def test_port_scope_captures_only_those_ports_whoever_runs_them() -> None:
    listen = {30001: {1000}, 31001: {2000}}
    d = discover(parse_ps(PS), listen_pids=listen, scope_ports=(31001,), all_users=False)
    assert [s.port for s in d.services] == [31001]
    assert sorted(s.port for s, _why in d.out_of_scope) == [30000, 30001]


def test_one_user_on_the_node_is_not_a_shared_node() -> None:
    single = "\n".join(ln for ln in PS.splitlines() if ln.split()[0] not in ("2000", "2001", "3000"))
    d = discover(parse_ps(single + "\n"), listen_pids={30001: {1000}}, all_users=False)
    assert [s.port for s in d.services] == [30001] and not d.out_of_scope
