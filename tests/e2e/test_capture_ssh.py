"""End-to-end: capture the lab over real sshd (stock settings), as root and via sudo."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.capture.planner import PlanOptions
from pdforensics.cli import main
from pdforensics.lab import set_fault
from pdforensics.views.loaded import load_capture
from tests.e2e.conftest import PLANTED_TOKEN, cluster_as

pytestmark = [pytest.mark.e2e, pytest.mark.lab]


def capture(cluster: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], float]:
    t0 = time.monotonic()
    result = CliRunner().invoke(main, ["capture", "-c", str(cluster), "-o", str(out), "--json",
                                       *extra])
    wall = time.monotonic() - t0
    assert result.stdout.strip(), result.output
    return result.exit_code, json.loads(result.stdout), wall


def assert_every_family(bundle: Path) -> None:
    """Every evidence family of the capture issue, for every host; stacks of every rank."""
    cap = load_capture(bundle)
    assert cap.status == "complete", cap.partial_reasons
    by_host: dict[str, dict[str, list[Any]]] = {}
    for r in cap.results:
        by_host.setdefault(r.host, {}).setdefault(r.source, []).append(r)
    for host in cap.hosts:
        got = by_host[host.name]
        ok = {src for src, rows in got.items() if all(r.ok for r in rows)}
        assert host.reachable and host.discovered, host
        assert {"ps", "ss_listen", "ss_established", "cmdline", "environ", "uname",
                "log_file", "kernel_log", "nvidia_smi_query"} <= set(got), got.keys()
        # the router is the real smg, a Rust binary: py-spy is for the servers' Python processes
        assert "pyspy" in got or host.services[0].kind == "router", got.keys()
        assert {"ps", "ss_listen", "ss_established", "cmdline", "environ", "log_file",
                "kernel_log"} <= ok, {s: [r.error or r.stderr for r in got[s]] for s in got}
        assert any("systemd" in n for n in host.notes), host.notes  # says where times come from
        (svc,) = host.services
        assert svc.root_pid is not None
        if svc.kind == "router":
            assert len(got["router_metrics"]) == 3 and {"workers", "health", "get_loads", "router_log"} <= ok
            assert svc.router_log is not None and svc.router_log.lines > 0
            assert len(svc.good_samples) == 3
        else:
            assert {"metrics", "health", "model_info", "loads", "server_info", "pip_freeze",
                    "nvidia_smi_query", "nvidia_smi_apps", "nvidia_smi_nvlink",
                    "nvidia_smi_row_remapper", "nvidia_smi"} <= ok
            samples = svc.good_samples
            assert len(samples) == 3
            assert samples[-1].taken_at - samples[0].taken_at >= 3.5  # 2 s apart
            assert samples[0].snapshot is not None
            assert samples[0].snapshot.get("sglang:num_running_reqs")
            assert svc.version() and host.gpus and host.gpu_apps
            ranks = {p.info.rank for p in svc.ranks}
            assert ranks == {"TP0", "TP1"}
            for p in svc.processes:
                assert p.cmdline, p.info
                assert len(p.stacks) == PlanOptions().stack_dumps == 3, p.info  # the default
                for dump in p.stacks:
                    assert dump.failure is None and dump.dumps, (p.info, dump)
                    frames = {f.function for d in dump.dumps for t in d.threads for f in t.frames}
                    assert frames
            sched_frames = {f.file for p in svc.ranks for s in p.stacks for d in s.dumps
                            for t in d.threads for f in t.frames}
            assert any("sglang/srt/managers/scheduler.py" in f for f in sched_frames)
        env = svc.environ
        assert env.get("SGLANG_DISAGGREGATION_WAITING_TIMEOUT") == "300" or svc.kind == "router"
        if svc.kind == "router" and not env:
            continue  # smg's process title is written over its environ: /proc/PID/environ is empty
        assert env["HF_TOKEN"].startswith("<redacted:"), env["HF_TOKEN"]


def assert_no_secret(bundle: Path) -> None:
    grep = subprocess.run(["grep", "-r", "-l", PLANTED_TOKEN, str(bundle)], capture_output=True,
                          text=True)
    assert grep.returncode == 1, f"planted secret found in: {grep.stdout}"
    grep = subprocess.run(["grep", "-r", "-l", "-a", PLANTED_TOKEN[3:], str(bundle)],
                          capture_output=True, text=True)
    assert grep.returncode == 1, f"planted secret found in: {grep.stdout}"


def test_complete_capture_as_root(ssh_lab: Path, tmp_path: Path) -> None:
    cluster = cluster_as(ssh_lab, "root", tmp_path / "root.toml")
    code, doc, wall = capture(cluster, tmp_path / "out")
    assert code == 0, doc
    assert doc["status"] == "complete"
    bundle = Path(doc["bundle"])
    assert_every_family(bundle)
    assert_no_secret(bundle)
    rows = json.loads((bundle / "manifest.json").read_text())["results"]
    reads = {r["source"] for r in rows if r.get("read")}  # root reads every file (runner)
    assert {"cmdline", "environ", "cgroup", "log_file"} & {r["source"] for r in rows} <= reads
    assert not any(r["argv"] and r["source"] in reads for r in rows)
    hosts = json.loads((bundle / "manifest.json").read_text())["hosts"]
    # every command and read of a host went through its one session runner, said in the manifest
    assert all(h["runner"].startswith("one exec channel: timeout -k 2") for h in hosts), \
        [h["runner"] for h in hosts]
    verify = CliRunner().invoke(main, ["verify", str(bundle)])
    assert verify.exit_code == 0, verify.output


def test_complete_capture_as_sudo_user(ssh_lab: Path, tmp_path: Path) -> None:
    """A sudo host's runner starts under `sudo -n` once: no command carries its own sudo, and
    the root-owned servers' environ is read like any file."""
    cluster = cluster_as(ssh_lab, "pdfx", tmp_path / "pdfx.toml")
    code, doc, _ = capture(cluster, tmp_path / "out")
    assert code == 0, doc
    bundle = Path(doc["bundle"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    rows = manifest["results"]
    pyspy = [r for r in rows if r["source"] == "pyspy"]
    assert pyspy and all(r["argv"][:2] == ["timeout", "-k"] and r["exit_status"] == 0 for r in pyspy)
    # as root, py-spy runs at a higher priority, for real (nice said nothing: it was allowed)
    assert all(r["argv"][4:7] == ["nice", "-n", "-10"] and r["argv"][7].endswith("py-spy")
               and "nice" not in r["stderr"] for r in pyspy)
    assert not any(r["argv"] and "sudo" in r["argv"] for r in rows)
    environ = [r for r in rows if r["source"] == "environ"]
    assert environ and all(r["argv"] is None and r["read"] and r["exit_status"] == 0 for r in environ)
    for h in manifest["hosts"]:
        assert h["runner"].startswith("one exec channel: sudo -n timeout") and "as root" in h["runner"]
        assert not any("sudo -n" in n for n in h["fallbacks"]), h
    assert_every_family(bundle)
    assert_no_secret(bundle)


def test_complete_capture_as_sudo_user_with_sudo_per_command(ssh_lab: Path, tmp_path: Path) -> None:
    """`runner_sudo = false`: the runner is the login user's and privileged commands and reads
    go through their own `sudo -n`."""
    cluster = cluster_as(ssh_lab, "pdfx", tmp_path / "pdfx.toml")
    cluster.write_text(cluster.read_text().replace("sudo = true\n", "sudo = true\nrunner_sudo = false\n"))
    code, doc, _ = capture(cluster, tmp_path / "out")
    assert code == 0, doc
    bundle = Path(doc["bundle"])
    rows = json.loads((bundle / "manifest.json").read_text())["results"]
    pyspy = [r for r in rows if r["source"] == "pyspy"]
    assert pyspy and all(r["argv"][:2] == ["sudo", "-n"] for r in pyspy)
    # cmdline is anyone's to read: over SFTP, no command and no sudo (the row names the file)
    cmdlines = [r for r in rows if r["source"] == "cmdline"]
    assert cmdlines and all(r["argv"] is None and r["read"].startswith("/proc/") for r in cmdlines)
    # the root-owned servers' environ is not the login user's: `sudo -n cat` instead, said once
    environ = [r for r in rows if r["source"] == "environ"]
    assert environ and all(r["argv"][:2] == ["sudo", "-n"] and r["exit_status"] == 0 for r in environ)
    hosts = json.loads((bundle / "manifest.json").read_text())["hosts"]
    assert all(sum("sudo -n" in n for n in h["fallbacks"]) == 1 for h in hosts), hosts
    assert all(h["runner"].startswith("one exec channel: timeout") for h in hosts), hosts
    assert_every_family(bundle)
    assert_no_secret(bundle)


def test_host_down_gives_partial_with_the_others_complete(ssh_lab: Path, tmp_path: Path) -> None:
    cluster = cluster_as(ssh_lab, "root", tmp_path / "down.toml")
    text = cluster.read_text() + (
        '\n[[hosts]]\nname = "decode-1"\naddress = "127.0.0.9"\nport = 45199\n'
        f'identity = "{ssh_lab.parent}/keys/id_ed25519"\n'
        f'known_hosts = "{ssh_lab.parent}/keys/known_hosts"\n')
    cluster.write_text(text)
    code, doc, wall = capture(cluster, tmp_path / "out", "--no-stacks", "--samples", "2",
                              "--interval", "1")
    assert code == 3, doc
    assert doc["status"] == "partial"
    assert any("decode-1" in r for r in doc["partial_reasons"])
    down = [g for g in doc["gaps"] if g["host"] == "decode-1"]
    assert down and "cannot connect" in down[0]["error"]
    cap = load_capture(doc["bundle"])
    others = [h for h in cap.hosts if h.name != "decode-1"]
    assert len(others) == 3 and all(h.reachable and h.discovered for h in others)
    assert all(any(s.good_samples for s in h.services) for h in others)


def test_hung_endpoint_times_out_within_deadline(ssh_lab: Path, tmp_path: Path) -> None:
    cluster = cluster_as(ssh_lab, "root", tmp_path / "hung.toml")
    set_fault(ssh_lab.parent, "hung-endpoint")
    try:
        time.sleep(1.0)
        code, doc, wall = capture(cluster, tmp_path / "out", "--deadline", "15")
    finally:
        set_fault(ssh_lab.parent, "healthy")
    assert wall <= 15 + 5, wall
    rows = json.loads((Path(doc["bundle"]) / "manifest.json").read_text())["results"]
    info = [r for r in rows if r["source"] in ("server_info", "get_server_info")]
    assert info and all(r["timed_out"] for r in info), info
    metrics = [r for r in rows if r["source"] == "metrics"]
    assert metrics and all(r["exit_status"] == 0 for r in metrics)


def test_unknown_host_key_is_refused(ssh_lab: Path, tmp_path: Path) -> None:
    cluster = cluster_as(ssh_lab, "root", tmp_path / "nokey.toml")
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    cluster.write_text(cluster.read_text().replace(f"{ssh_lab.parent}/keys/known_hosts",
                                                   str(empty)))
    code, doc, _ = capture(cluster, tmp_path / "out", "--no-stacks", "--samples", "1")
    assert code == 6  # every host refused: nothing collected (was 3, the code of a mild partial)
    errors = [g["error"] for g in doc["gaps"] if g["source"] == "connect"]
    assert len(errors) == 3 and all("unknown host key" in e for e in errors), errors
    assert all(re.search(r"unknown host key ssh-\S+ SHA256:[A-Za-z0-9+/]{43}\b", e) for e in errors), errors


def test_catalog_from_the_servers_own_sglang_source(ssh_lab: Path, tmp_path: Path) -> None:
    """--with-sglang-source copies what the catalog reads; `catalog build --from BUNDLE` uses it."""
    cluster = cluster_as(ssh_lab, "pdfx", tmp_path / "pdfx.toml")
    code, doc, _ = capture(cluster, tmp_path / "out", "--with-sglang-source", "--no-stacks")
    assert code == 0, doc
    bundle = Path(doc["bundle"])
    copies = sorted(bundle.glob("raw/*/sglang_source*.jsonl"))
    assert {c.parent.name for c in copies} == {"prefill-0", "decode-0"}
    out = tmp_path / "catalog.json"
    built = CliRunner().invoke(main, ["catalog", "build", "--from", str(bundle), "-o", str(out)])
    assert built.exit_code == 0, built.output
    cat = json.loads(out.read_text())
    assert cat["version"] == "0.5.23"
    assert cat["flags"]["--cuda-graph-max-bs-decode"]["default"] is None
    assert "--disaggregation-mode" in cat["flags"] and "copied into" in cat["source"]
