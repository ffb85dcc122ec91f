"""The fault matrix of the reliability issue, end to end over real sshd and the lab.

Every case runs the real CLI as a process and checks: the exit code, a one-line message naming
host and source, no traceback, the end within --deadline + 5 s, a bundle that verifies, and no
remote command left running afterwards. Each case adds a row to fault_matrix.json (the table
in docs/reliability.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pdforensics.bundle.ondisk import verify_bundle
from pdforensics.lab import lab_down, lab_status, lab_up
from tests.e2e import faultkit as fk
from tests.support import ports
from tests.support.bundles import gathered

pytestmark = [pytest.mark.e2e, pytest.mark.lab, pytest.mark.slow]

BASE = ports.block(100, (*ports.LOOPBACKS, "127.0.0.10"))  # lab: BASE..BASE+5; fake servers: BASE+90..99
DEADLINE = 20.0
FAST = ["--deadline", str(DEADLINE), "--samples", "2", "--interval", "1", "--stack-dumps", "1"]
ARTIFACTS = Path(os.environ.get("PDFX_ARTIFACTS", Path(__file__).resolve().parents[1] / "artifacts"))
MATRIX = fk.Matrix()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    lab_dir = tmp_path_factory.mktemp("faultlab")
    lab_up(lab_dir, fault="healthy", ssh=True, base_port=BASE, sudo_user="pdfx")
    try:
        yield lab_dir
    finally:
        lab_down(lab_dir)
        MATRIX.write(ARTIFACTS / "fault_matrix.json")


@pytest.fixture
def cluster(lab: Path) -> dict[str, Any]:
    return fk.read_cluster(lab / "cluster.toml")


def markers(lab: Path, *extra: str) -> list[str]:
    """What identifies a remote command of this module's captures in `ps`."""
    pids = [p.pid for p in lab_status(lab).processes if not p.name.startswith("sshd")]
    return [str(lab), *(f"--pid {pid}" for pid in pids), *(f":{p}/" for p in range(BASE, BASE + 5)),
            *(f":{p}" for p in range(BASE + 90, BASE + 100)), *extra]


def common_checks(run: fk.Run, lab: Path, *marks: str) -> float:
    fk.no_traceback(run)
    assert run.wall_s <= DEADLINE + 5, f"ended after {run.wall_s:.1f}s"
    assert run.bundle is not None, run.output
    verify_bundle(run.bundle)
    return fk.wait_no_strays(markers(lab, *marks), lab_pids(lab))


def lab_pids(lab: Path) -> frozenset[int]:
    """The lab's own processes: sshd listeners (not their sessions), servers and their ranks."""
    procs = lab_status(lab).processes
    pids = {p.pid for p in procs}
    for p in procs:
        if p.name.startswith("sshd"):
            continue
        try:
            pids.update(c.pid for c in psutil.Process(p.pid).children(recursive=True))
        except psutil.Error:
            pass
    return frozenset(pids)


def line_naming(run: fk.Run, host: str, *words: str) -> str:
    """The one line of output naming the host (and source/words): that is what the user sees."""
    for line in run.output.splitlines():
        if host in line and all(w in line for w in words):
            return line.strip()
    raise AssertionError(f"no line names {host} {words}:\n{run.output}")


# -- connection faults ---------------------------------------------------------------------
def test_host_unreachable(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    cluster["hosts"].append({**fk.host(cluster, "decode-0"), "name": "ghost-0", "address": "127.0.0.9",
                             "port": BASE + 99})
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    assert run.rc == 3, run.output
    seen = line_naming(run, "ghost-0", "connect")
    assert "refused" in seen or "cannot connect" in seen
    assert "ghost-0: unreachable" in run.manifest()["partial_reasons"]
    assert run.results(host="decode-0", source="metrics")[0]["exit_status"] == 0
    MATRIX.add("host unreachable (nothing listening)", run, seen, "that host's connect error; others complete",
               common_checks(run, lab))


def test_tcp_accepted_but_no_ssh_handshake(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    mute = fk.Server("127.0.0.10", BASE + 98, fk.silent)
    try:
        cluster["hosts"].append({**fk.host(cluster, "decode-0"), "name": "mute-0", "address": "127.0.0.10",
                                 "port": BASE + 98})
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        mute.close()
    assert run.rc == 3, run.output
    seen = line_naming(run, "mute-0", "connect")
    assert "timed out" in seen or "banner" in seen.lower(), seen
    MATRIX.add("TCP accepted, SSH handshake never completes", run, seen, "that host's connect error; others "
               "complete", common_checks(run, lab))


def test_auth_failure(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    key = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    fk.host(cluster, "prefill-0")["identity"] = str(key)
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    assert run.rc == 3, run.output
    seen = line_naming(run, "prefill-0", "authentication failed")
    MATRIX.add("authentication failure", run, seen, "that host's connect error; others complete",
               common_checks(run, lab))


def test_changed_host_key_is_refused(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    other = tmp_path / "otherhost"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, blob = other.with_suffix(".pub").read_text().split()[:2]
    known = Path(fk.host(cluster, "router-0")["known_hosts"]).read_text().splitlines()
    forged = [f"[127.0.0.2]:{BASE + 5} {kind} {blob}" if ln.startswith("[127.0.0.2]") else ln for ln in known]
    (tmp_path / "known_hosts").write_text("\n".join(forged) + "\n")
    fk.host(cluster, "router-0")["known_hosts"] = str(tmp_path / "known_hosts")
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    assert run.rc == 3, run.output
    seen = line_naming(run, "router-0", "CHANGED")
    assert "refusing" in seen
    MATRIX.add("changed host key", run, seen, "refused; that host's error; others complete",
               common_checks(run, lab))


def test_connection_dropped_mid_capture(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    """A fourth host on its own sshd (127.0.0.5), killed with all its connections 1 s after it connected."""
    conf = (lab / "sshd" / "decode-0.conf").read_text()
    conf = conf.replace("ListenAddress 127.0.0.4", "ListenAddress 127.0.0.5")
    conf = conf.replace(str(lab / "sshd" / "decode-0.pid"), str(tmp_path / "drop.pid"))
    (tmp_path / "drop.conf").write_text(conf)
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(tmp_path / "drop.conf")],
                            stderr=subprocess.DEVNULL)
    try:
        _wait_banner("127.0.0.5", BASE + 5)
        decode = fk.host(cluster, "decode-0")
        known = Path(decode["known_hosts"]).read_text().splitlines()
        line = next(ln for ln in known if ln.startswith("[127.0.0.4]"))
        (tmp_path / "known_hosts").write_text("\n".join([*known, line.replace("127.0.0.4", "127.0.0.5")]) + "\n")
        cluster["hosts"].append({**decode, "name": "drop-0", "address": "127.0.0.5",
                                 "known_hosts": str(tmp_path / "known_hosts")})
        threading.Thread(target=_kill_once_connected, args=(sshd.pid,), daemon=True).start()
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        fk.kill_tree(sshd.pid)
        sshd.wait()
    lost = [r for r in run.results(host="drop-0") if r["error"] in ("connection lost", "capture stopped")
            or (r["error"] or "").startswith("channel failed")]
    assert lost, run.output
    assert run.rc == 3, run.output
    seen = line_naming(run, "drop-0", "connection lost")
    assert run.results(host="decode-0", source="metrics")[0]["exit_status"] == 0
    MATRIX.add("SSH connection dropped mid-capture (sshd killed)", run, seen,
               "what arrived before the drop; the rest marked 'connection lost'", common_checks(run, lab))


def _kill_once_connected(sshd_pid: int) -> None:
    """Kill the sshd and its sessions 1 s after the capture's connection is up."""
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            if psutil.Process(sshd_pid).children():
                break
        except psutil.Error:
            return
        time.sleep(0.05)
    time.sleep(1.0)
    fk.kill_tree(sshd_pid)


def _wait_banner(address: str, port: int) -> None:
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            with socket.create_connection((address, port), timeout=1) as s:
                if s.recv(8).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"sshd on {address}:{port} did not come up")


# -- hanging and hostile commands -----------------------------------------------------------
def _rank_pid(lab: Path, role: str, rank: int) -> int:
    for p in lab_status(lab).processes:
        if p.name.startswith(f"{role}:") and p.name.endswith(f"_TP{rank}"):
            return p.pid
    raise AssertionError(f"no {role} TP{rank} in the lab")


def test_pyspy_on_a_stopped_process(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    pid = _rank_pid(lab, "decode", 1)
    os.kill(pid, signal.SIGSTOP)
    try:
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        os.kill(pid, signal.SIGCONT)
    dump = run.results(host="decode-0", source="pyspy", key=f"pyspy.pid{pid}.s1")[0]
    assert "--nonblocking" in dump["argv"], dump["argv"]  # ps said T: py-spy must not ptrace-wait
    assert dump["exit_status"] == 0 or dump["timed_out"], dump
    assert run.rc in (0, 3), run.output
    seen = f"decode-0 pyspy.pid{pid}: " + ("stacks read without stopping it (--nonblocking)"
                                           if dump["exit_status"] == 0 else "timed out")
    MATRIX.add("py-spy on a SIGSTOPped rank", run, seen, "its stacks, read with --nonblocking; rank state T "
               "in ps", common_checks(run, lab))


def _extra_service(cluster: dict[str, Any], port: int) -> None:
    """Declare a decode server on decode-0 that no SGLang process owns: reached at 127.0.0.1."""
    fk.host(cluster, "decode-0")["services"].append({"role": "decode", "port": port})


def test_endpoint_that_never_answers_and_one_that_trickles(lab: Path, cluster: dict[str, Any],
                                                           tmp_path: Path) -> None:
    mute = fk.Server("127.0.0.1", BASE + 90, fk.silent)
    slow = fk.Server("127.0.0.1", BASE + 91, fk.trickle)
    try:
        _extra_service(cluster, BASE + 90)
        _extra_service(cluster, BASE + 91)
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        mute.close()
        slow.close()
    for port in (BASE + 90, BASE + 91):
        rows = [r for r in run.results(host="decode-0") if (r.get("url") or "").startswith(f"http://127.0.0.1:{port}/")]
        assert rows and all(r["timed_out"] for r in rows), rows
    trickled = [r for r in run.results(host="decode-0") if (r.get("url") or "").endswith(f":{BASE + 91}/health")][0]
    assert trickled["bytes"] > 0  # what arrived before the timeout is kept
    assert run.results(host="decode-0", key=f"metrics.decode.{BASE + 1}.s1")[0]["exit_status"] == 0
    seen = line_naming(run, "decode-0", "health")
    MATRIX.add("endpoint accepts and never answers / trickles 1 byte/s", run, seen,
               "those results marked timed out, bytes received kept; the real servers complete",
               common_checks(run, lab))


def test_command_printing_a_gigabyte(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    fk.host(cluster, "router-0")["nvidia_smi"] = fk.script(tmp_path / "nvidia-smi", "exec head -c 1073741824 /dev/zero")
    t0 = time.monotonic()
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    rows = run.results(host="router-0", source="nvidia_smi_query")
    assert rows[0]["truncated"] and rows[0]["bytes"] <= 1024 * 1024, rows
    size = sum(f.stat().st_size for f in run.bundle.rglob("*") if f.is_file()) if run.bundle else 0
    assert size < 64 * 1024 * 1024, f"bundle is {size} bytes"
    seen = line_naming(run, "router-0", "nvidia_smi_query")
    MATRIX.add("command prints 1 GB", run, seen, f"first 1 MiB, marked truncated; bundle {size // 1024} KiB",
               common_checks(run, lab, str(tmp_path)))
    assert time.monotonic() - t0 < DEADLINE + 20


def test_non_utf8_output(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    fk.host(cluster, "prefill-0")["nvidia_smi"] = fk.script(
        tmp_path / "nvidia-smi", r"printf 'index, name\n0, \377\376\200 H200\n\300\301 garbage\n'")
    with open(lab / "logs" / "decode.log", "ab") as log:
        log.write(b"[2026-12-02 10:00:00 TP0] Decode transfer failed \xff\xfe\x80 for request\n")
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    raw = run.results(host="prefill-0", source="nvidia_smi_query")[0]
    assert raw["exit_status"] == 0
    assert b"\xff\xfe\x80" in (run.bundle / raw["path"]).read_bytes()  # raw bytes kept as they came
    analyzed = subprocess.run([*fk.CLI, "analyze", str(run.bundle)], capture_output=True, text=True)
    assert analyzed.returncode == 0 and "Traceback" not in analyzed.stderr, analyzed.stderr
    verdict = next(ln.strip() for ln in analyzed.stdout.splitlines() if ln.strip())
    MATRIX.add("non-UTF-8 bytes in command output and logs", run, f"no error; `analyze`: {verdict[:120]}",
               "the exact bytes in raw/", common_checks(run, lab, str(tmp_path)))


def test_process_exits_between_discovery_and_collection(lab: Path, cluster: dict[str, Any],
                                                        tmp_path: Path) -> None:
    """A router process that discovery finds and that is gone when its /proc reads run."""
    fake = subprocess.Popen(["python3", "-c", "import time; time.sleep(300)", "-m", "sglang_router.launch_router",
                             "--host", "127.0.0.1", "--port", str(BASE + 92)])
    fk.host(cluster, "router-0")["services"].append({"role": "router", "port": BASE + 92})
    try:
        run = _capture_killing(cluster, tmp_path, fake)
    finally:
        fake.kill()
        fake.wait()
    rows = [r for r in run.manifest()["results"] if f"pid{fake.pid}" in r["key"]]
    assert rows and all(r["exit_status"] != 0 for r in rows), \
        [(r["key"], r["exit_status"], (r.get("stderr") or "")[:80]) for r in rows]
    assert run.rc in (0, 3), run.output
    seen = line_naming(run, "router-0", f"pid{fake.pid}")
    MATRIX.add("process exits between discovery and collection", run, seen,
               "its reads marked failed with the remote error (No such file or directory)", common_checks(run, lab))


def _capture_killing(cluster: dict[str, Any], tmp_path: Path, fake: subprocess.Popen[bytes]) -> fk.Run:
    """Capture in-process, killing the fake right after discovery has listed it."""
    import pdforensics.capture.run as cap
    from pdforensics.config.cluster import load_cluster_file

    cfile = fk.write_cluster(cluster, tmp_path / "c.toml")
    out = tmp_path / "out"

    def progress(host: str, text: str) -> None:
        if host == "router-0" and text.startswith("found"):
            fake.kill()
            fake.wait()  # reaped: a zombie's /proc/PID/cgroup would still be readable

    t0 = time.monotonic()
    outcome = cap.run_capture(load_cluster_file(cfile), cap.CaptureOptions(out_dir=out, deadline_s=DEADLINE),
                              progress=progress)
    lines = [f"{g['host']} {g['key']}: {g['error']} {g['stderr']}" for g in cap.outcome_json(outcome)["gaps"]]
    return fk.Run(0 if outcome.status == "complete" else 3, "\n".join(lines), "", time.monotonic() - t0,
                  outcome.bundle)


def test_malformed_metrics(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    garbage = (b"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{engine_type=\"decode\" 3\n"
               b"sglang:token_usage NaNx\n\xff\xfe{{}}\n" + b"x" * 70000 + b"\nsglang:gen_throughput 1e999999\n")
    server = fk.Server("127.0.0.1", BASE + 93, fk.http_body(garbage))
    try:
        _extra_service(cluster, BASE + 93)
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        server.close()
    rows = [r for r in run.results(host="decode-0", source="metrics") if f":{BASE + 93}/" in (r.get("url") or "")]
    assert rows and rows[0]["exit_status"] == 0
    analyzed = subprocess.run([*fk.CLI, "analyze", str(run.bundle)], capture_output=True, text=True)
    assert analyzed.returncode == 0 and "Traceback" not in analyzed.stderr, analyzed.stderr
    from pdforensics.views.loaded import load_capture

    assert run.bundle is not None, run.output
    svc = next(s for s in load_capture(run.bundle).services("decode") if s.port == BASE + 93)
    snap = svc.metrics[0].snapshot
    assert snap is not None and len(snap.bad_lines) >= 3, snap
    good = [x.name for x in snap.samples]
    assert "sglang:gen_throughput" in good  # the line after the garbage still counts
    MATRIX.add("malformed /metrics", run, f"nothing fails: {len(snap.bad_lines)} bad lines skipped with their "
               f"line numbers, {len(good)} good samples kept", "the body as served in raw/", common_checks(run, lab))


def test_truncated_pyspy_output(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    # the cluster file names py-spy only when it is not on PATH
    real = fk.host(cluster, "decode-0").get("py_spy") or shutil.which("py-spy") or "py-spy"
    fk.host(cluster, "decode-0")["py_spy"] = fk.script(tmp_path / "py-spy", f'"{real}" "$@" | head -c 300')
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    dumps = run.results(host="decode-0", source="pyspy")
    assert dumps and all(0 < r["bytes"] <= 300 for r in dumps), dumps
    analyzed = subprocess.run([*fk.CLI, "analyze", str(run.bundle)], capture_output=True, text=True)
    assert analyzed.returncode == 0 and "Traceback" not in analyzed.stderr, analyzed.stderr
    cut = sorted(str(p) for p in run.bundle.glob("raw/decode-0/pyspy.*")) if run.bundle else []
    assert cut
    stacks = subprocess.run([*fk.CLI, "stacks", *cut], capture_output=True, text=True)
    # a dump cut inside its header holds no thread: that file is named and skipped (exit 3),
    # the others are analysed; with every dump cut after a thread line it is 0
    assert stacks.returncode in (0, 3) and "Traceback" not in stacks.stderr, stacks.stderr
    assert stacks.returncode == 0 or "no thread" in stacks.stderr, stacks.stderr
    first = next(ln.strip() for ln in stacks.stdout.splitlines() if ln.strip())
    assert "ends mid-line (cut short)" in stacks.stderr, stacks.stderr
    MATRIX.add("truncated py-spy output", run, f"`stacks`: {first}", "the 300 bytes that came, marked truncated "
               "by the parser", common_checks(run, lab, str(tmp_path)))


# -- the tool itself interrupted or starved ----------------------------------------------------
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signal_mid_capture(lab: Path, cluster: dict[str, Any], tmp_path: Path, sig: int, code: int) -> None:
    out = tmp_path / "out"  # the signal comes once a result is in: a loaded machine may still
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), out,  # be importing at 2.5 s
                     "--deadline", "30", "-q", signal_after=(sig, 1.0),  # -q: no progress lines
                     signal_when=lambda: gathered(out))
    assert run.rc == code, run.output
    err = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "interrupted" in err[0].lower(), run.stderr
    m = run.manifest()
    assert m["status"] == "partial" and m["interrupted"], m["partial_reasons"]
    assert any(r["exit_status"] == 0 for r in m["results"])  # what was gathered is there
    fk.no_traceback(run)
    assert run.signalled_s is not None and run.wall_s - run.signalled_s < 6
    assert run.bundle is not None
    verify_bundle(run.bundle)
    MATRIX.add(f"{signal.Signals(sig).name} mid-capture", run, err[0], "everything gathered so far; "
               "manifest partial, interrupted", fk.wait_no_strays(markers(lab), lab_pids(lab)))


def test_local_disk_full(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    assert mounted.returncode == 0, f"cannot mount a small tmpfs (needs root): {mounted.stderr!r}"
    try:
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), mnt, *FAST, "-q")
        left = sorted(p.name for p in mnt.iterdir())
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    fk.no_traceback(run)
    assert run.wall_s <= DEADLINE + 5
    if run.bundle is None:  # the manifest did not fit: an error, and no finished-looking bundle
        assert run.rc not in (0, 3), run.output
        err = [ln for ln in run.stderr.splitlines() if ln.strip()]
        assert len(err) == 1 and "space" in err[0].lower(), run.stderr
        seen, holds = err[0], f"no finished bundle; the evidence kept in {', '.join(left)}"
    else:  # it fitted: a bundle marked partial that names every file it could not write
        assert run.rc == 3, run.output
        reasons = run.manifest()["partial_reasons"]
        assert any("No space left" in r for r in reasons), reasons
        seen = next(ln for ln in run.output.splitlines() if "No space left" in ln)
        holds = "a partial bundle listing each file it could not write"
    MATRIX.add("local disk full while writing", run, seen, holds, fk.wait_no_strays(markers(lab), lab_pids(lab)))


def test_matrix_rows_are_plausible() -> None:
    """Runs last in this module: every row has an exit code and an end time."""
    for row in MATRIX.rows:
        assert isinstance(row["exit"], int) and row["end_s"] >= 0

