"""The fault matrix, continued: hostile hosts and a killed tool (issue 20).

Same lab, same checks and same fault_matrix.json as test_fault_matrix.py (rows merge by fault):
a host whose text tries to take over the operator's terminal (checked on a real pseudo-terminal),
a capture killed with SIGKILL and recovered, a host without `ps`, a login shell that prints a
banner, and an SSH server that stalls after its banner.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pdforensics.bundle.ondisk import verify_bundle
from pdforensics.terminal import field
from tests.e2e import faultkit as fk
from tests.e2e.test_fault_matrix import (  # noqa: F401 (lab: the module's fixture)
    BASE,
    DEADLINE,
    FAST,
    MATRIX,
    _wait_banner,
    common_checks,
    lab,
    lab_pids,
    line_naming,
    markers,
)
from tests.security.ptyrun import run_on_pty, unsafe_bytes
from tests.support.bundles import gathered

pytestmark = [pytest.mark.e2e, pytest.mark.lab]

ESCAPES = ("fine\roverwritten\b\x7f\u202etxt.exe "  # CR overwrite, backspace, DEL, bidi
           "\x1b[2J\x1b[H"  # clear the screen
           "\x1b[32;1mHEALTHY\x1b[0m "  # the summary's own colour, forged
           "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the operator's clipboard
           "\x1b]8;;http://127.0.0.1/x\x1b\\link\x1b]8;;\x1b\\"  # OSC 8 hyperlink
           "\x1b]0;owned\x07")  # window title


@pytest.fixture
def cluster(lab: Path) -> dict[str, Any]:  # noqa: F811
    return fk.read_cluster(lab / "cluster.toml")


# -- the operator's terminal -----------------------------------------------------------------
PLAIN = {"NO_COLOR": "1"}


def test_host_text_on_a_pseudo_terminal(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    """stderr of a failing command, a log line and a process's argv carry escape sequences;
    `capture` (progress, gaps, findings) and `analyze` run on a real pty."""
    shared = Path(tempfile.mkdtemp(prefix="pdfx-tty-"))
    shared.chmod(0o755)
    esc = ESCAPES.replace("\\", "\\\\").replace("'", "")
    fk.host(cluster, "router-0")["nvidia_smi"] = fk.script(
        shared / "nvidia-smi", f"printf '%b\\n' '{esc}' >&2; exit 9")
    with open(lab / "logs" / "decode.log", "a") as log:
        log.write(f"[2026-12-02 10:00:00 TP0] Decode transfer failed {ESCAPES} for request\n")
    fake = subprocess.Popen(["python3", "-c", "import time; time.sleep(120)", "-m", "sglang_router.launch_router",
                             "--host", "127.0.0.1", "--port", "43094", "--model-path", f"/m/{ESCAPES}"])
    fk.host(cluster, "router-0")["services"].append({"role": "router", "port": 43094})
    cfile = fk.write_cluster(cluster, tmp_path / "c.toml")
    t0 = time.monotonic()
    try:
        # NO_COLOR: every ESC on this terminal other than the progress block's is a failure
        # (the summary's own colours are checked in test_exit_codes_ssh)
        rc, seen = run_on_pty([*fk.CLI, "capture", "-c", str(cfile), "-o", str(tmp_path / "out"), *FAST],
                              env=PLAIN)
    finally:
        fake.kill()
        fake.wait()
        shutil.rmtree(shared, ignore_errors=True)
    wall = time.monotonic() - t0
    bundle = fk.newest_bundle(tmp_path / "out")
    assert rc in (0, 3) and bundle is not None, seen
    arc, analyzed = run_on_pty([*fk.CLI, "analyze", str(bundle)], env=PLAIN)
    assert arc == 0, analyzed
    assert unsafe_bytes(seen, own_block=True) == [], seen  # the progress block's own, nothing else
    assert unsafe_bytes(analyzed) == [], analyzed
    for received in (seen, analyzed):
        assert b"Traceback" not in received
    assert b"\\x1b]52;c;" in seen, seen  # shown visibly, not dropped: the operator sees the attempt
    line = next(ln for ln in seen.decode().splitlines() if "nvidia_smi_query" in ln and "router-0" in ln)
    run = fk.Run(rc, seen.decode(errors="replace"), "", wall, bundle)
    MATRIX.add("host text with terminal escapes (ESC[2J, OSC 52/8/0, CR, BS, DEL, bidi) on a pty", run,
               line.strip()[:160], "the bytes as the host sent them, in raw/; the terminal got them "
               "shown as \\x1b, \\r, \\u202e", common_checks(run, lab))


# -- kills -----------------------------------------------------------------------------------
def test_sigkill_then_recover(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    cfile = fk.write_cluster(cluster, tmp_path / "c.toml")
    out = tmp_path / "out"
    killed = fk.capture(cfile, out, "--deadline", "30", signal_after=(signal.SIGKILL, 0.5),
                        signal_when=lambda: gathered(out))
    assert killed.rc == -signal.SIGKILL and killed.bundle is None, killed.output
    left = [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1, left
    tmp = left[0]
    analyzed = subprocess.run([*fk.CLI, "analyze", str(tmp)], capture_output=True, text=True)
    assert analyzed.returncode == 1 and f"pdforensics recover {tmp}" in analyzed.stderr, analyzed
    nxt = fk.capture(cfile, out, *FAST)
    notice = [ln for ln in nxt.stderr.splitlines() if "unfinished capture" in ln]
    assert len(notice) == 1 and f"pdforensics recover {tmp}" in notice[0], nxt.stderr
    rec = subprocess.run([*fk.CLI, "recover", str(tmp)], capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    bundle = Path(rec.stdout.split()[1])
    assert verify_bundle(bundle) == [] and not tmp.exists()
    m = json.loads((bundle / "manifest.json").read_text())
    assert m["status"] == "partial" and m["recovered"]
    assert any(r["exit_status"] == 0 for r in m["results"])  # what was gathered before the kill
    fk.no_traceback(nxt)
    run = fk.Run(killed.rc, notice[0], "", killed.wall_s, bundle)
    MATRIX.add("SIGKILL mid-capture, then the next capture and `recover`", run,
               f"next capture: {notice[0][:150]}…",
               f"`recover`: a partial bundle, {len(m['results'])} results kept, redacted, verifies",
               fk.wait_no_strays(markers(lab), lab_pids(lab)))


def test_terminal_closed_mid_capture(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    """The operator's SSH session to the bastion drops: the capture's terminal hangs up
    (the kernel sends SIGHUP) and later writes to it fail; the partial bundle is still made."""
    cfile = fk.write_cluster(cluster, tmp_path / "c.toml")
    out = tmp_path / "out"
    t0 = time.monotonic()
    rc, before = run_on_pty([*fk.CLI, "capture", "-c", str(cfile), "-o", str(out), "--deadline", "30"],
                            hang_up_after=1.0, hang_up_once=b"found")  # once discovery is done
    wall = time.monotonic() - t0
    bundle = fk.newest_bundle(out)
    assert rc == 128 + signal.SIGHUP and bundle is not None, (rc, before)
    assert b"found" in before  # the progress lines were on that terminal
    last_line = [ln for ln in before.decode(errors="replace").splitlines() if ln.strip()][-1].strip()
    m = json.loads((bundle / "manifest.json").read_text())
    assert m["status"] == "partial" and m["interrupted"], m["partial_reasons"]
    assert "interrupted by SIGHUP" in m["partial_reasons"]
    assert any(r["exit_status"] == 0 for r in m["results"])
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    run = fk.Run(rc, "", "", wall, bundle)
    MATRIX.add("operator's terminal closed mid-capture (dropped bastion session: SIGHUP, then EIO)", run,
               f"until the hang-up: {field(last_line)}; after it nothing (the terminal is gone)",
               f"everything gathered so far ({len(m['results'])} results); manifest partial, "
               "interrupted by SIGHUP", common_checks(run, lab))


# -- honest absences ---------------------------------------------------------------------------
@contextmanager
def wrapped_host(lab: Path, cluster: dict[str, Any], tmp_path: Path, wrapper_body: str) -> Iterator[Path]:  # noqa: F811
    """decode-0 reached through its own sshd on 127.0.0.5 whose every session runs through a
    wrapper (sshd ForceCommand): a login that prints a banner, or a PATH without a tool."""
    shared = Path(tempfile.mkdtemp(prefix="pdfx-wrap-"))
    shared.chmod(0o755)
    wrapper = fk.script(shared / "login", wrapper_body)
    conf = (lab / "sshd" / "decode-0.conf").read_text()
    conf = conf.replace("ListenAddress 127.0.0.4", "ListenAddress 127.0.0.5")
    conf = conf.replace(str(lab / "sshd" / "decode-0.pid"), str(tmp_path / "wrap.pid"))
    (tmp_path / "wrap.conf").write_text(conf + f"ForceCommand {wrapper}\n")
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(tmp_path / "wrap.conf")],
                            stderr=subprocess.DEVNULL)
    try:
        _wait_banner("127.0.0.5", BASE + 5)
        decode = fk.host(cluster, "decode-0")
        known = Path(decode["known_hosts"]).read_text().splitlines()
        line = next(ln for ln in known if ln.startswith("[127.0.0.4]"))
        (tmp_path / "known_hosts").write_text("\n".join([*known, line.replace("127.0.0.4", "127.0.0.5")]) + "\n")
        decode.update(address="127.0.0.5", known_hosts=str(tmp_path / "known_hosts"))
        yield shared
    finally:
        fk.kill_tree(sshd.pid)
        sshd.wait()
        shutil.rmtree(shared, ignore_errors=True)


def _path_without(shared: Path, tool: str) -> Path:
    """A bin directory with every command of the system but TOOL."""
    bindir = shared / "bin"
    bindir.mkdir()
    bindir.chmod(0o755)  # the login user must enter it whatever the umask (077 in CI)
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for f in Path(d).iterdir() if Path(d).is_dir() else ():
            if f.name != tool and not (bindir / f.name).exists():
                (bindir / f.name).symlink_to(f)
    return bindir


def test_host_without_ps(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    shared = Path(tempfile.mkdtemp(prefix="pdfx-nops-"))
    shared.chmod(0o755)
    try:
        bindir = _path_without(shared, "ps")
        body = f'PATH={bindir} exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
        with wrapped_host(lab, cluster, tmp_path, body):
            # ps is missing from the login PATH only: a runner under sudo (secure_path) finds it
            fk.host(cluster, "decode-0")["runner_sudo"] = False
            run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    ps = run.results(host="decode-0", source="ps")
    assert ps and ps[-1]["exit_status"] == 127, ps
    seen = line_naming(run, "decode-0", "ps")
    assert "ps" in seen and ("No such file" in seen or "not found" in seen), seen
    analyzed = subprocess.run([*fk.CLI, "analyze", str(run.bundle)], capture_output=True, text=True)
    assert analyzed.returncode == 0, analyzed.stderr
    assert "no server process found" not in analyzed.stdout, analyzed.stdout
    gap = next(ln.strip() for ln in analyzed.stdout.splitlines() if "process table of decode-0" in ln)
    assert "ps failed" in gap
    MATRIX.add("`ps` missing on a host", run, f"{seen[:110]}; `analyze`: {gap[:110]}",
               "the gap, and every other source of that host; no 'no server process found'",
               common_checks(run, lab))


BANNER = "Welcome to decode-0 -- authorised use only"


def test_login_banner_on_stdout(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    body = f'echo "{BANNER}"; exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
    with wrapped_host(lab, cluster, tmp_path, body):
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    assert run.rc == 0, run.output
    assert run.bundle is not None
    raws = [p for p in (run.bundle / "raw" / "decode-0").iterdir() if BANNER.encode() in p.read_bytes()]
    assert raws == [], raws
    disc = json.loads((run.bundle / "parsed" / "decode-0" / "discovery.json").read_text())
    note = next(n for n in disc["notes"] if "login shell prints" in n)
    assert disc["services"] and all(not p["args"].startswith("Welcome") for p in disc["processes"])
    analyzed = subprocess.run([*fk.CLI, "analyze", str(run.bundle)], capture_output=True, text=True)
    assert analyzed.returncode == 0 and "no server process found" not in analyzed.stdout, analyzed.stdout
    dumps = run.results(host="decode-0", source="pyspy")
    assert dumps and all(d["exit_status"] == 0 for d in dumps), dumps
    MATRIX.add("login shell prints a banner on stdout", run, f"discovery note: {note[:140]}",
               "outputs without the banner; processes, argv and py-spy stacks parsed",
               common_checks(run, lab))


def _banner_then_silence(conn: Any, stop: threading.Event) -> None:
    try:
        conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n")
    except OSError:
        return
    stop.wait(120)


def test_handshake_stalls_after_the_banner(lab: Path, cluster: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    stall = fk.Server("127.0.0.11", 43097, _banner_then_silence)
    try:
        cluster["hosts"].append({**fk.host(cluster, "decode-0"), "name": "stall-0", "address": "127.0.0.11",
                                 "port": 43097})
        run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST)
    finally:
        stall.close()
    assert run.rc == 3, run.output
    seen = line_naming(run, "stall-0", "connect")
    assert "stalled after the banner" in seen and "No existing session" not in run.output, seen
    MATRIX.add("SSH banner sent, then the handshake stalls", run, seen,
               "that host's connect error; others complete", common_checks(run, lab))

