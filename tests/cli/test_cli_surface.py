"""The command-line surface without hosts: input checked before any work, the shared duration
type, --fail-on, -V, --json on verify and lab status, expected absences, the progress block."""

from __future__ import annotations

import base64
import io
import json
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.capture.completeness import collection_reasons, failed_to_collect, is_expected_absence
from pdforensics.capture.progress import LiveProgress
from pdforensics.cli import main
from pdforensics.cli import options as cli_options
from pdforensics.cli.capture import capture_exit
from pdforensics.cli.options import fails
from pdforensics.config.cluster import load_cluster_file
from pdforensics.config.known_hosts import fingerprint
from pdforensics.errors import ConfigError, ExitStatus
from tests.support.builder import BundleBuilder

GEN = "sglang:generation_tokens_total"
FWD = "sglang:forward_execution_seconds_total"


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def blob(kind: str = "ssh-ed25519") -> bytes:
    return struct.pack(">I", len(kind)) + kind.encode() + struct.pack(">I", 32) + bytes(range(32))


def cluster(tmp_path: Path, host_extra: str = "", top: str = "") -> Path:
    (tmp_path / "id").write_text("key\n")
    (tmp_path / "kh").write_text(f"[127.0.0.3]:2222 ssh-ed25519 {base64.b64encode(blob()).decode()}\n")
    f = tmp_path / "c.toml"
    f.write_text(f'{top}[cluster]\nname = "t"\n[[hosts]]\nname = "d"\naddress = "127.0.0.3"\n'
                 f'identity = "id"\nknown_hosts = "kh"\n{host_extra}'
                 '[[hosts.services]]\nrole = "decode"\nport = 30001\n')
    return f


# -- the cluster file --------------------------------------------------------------------------
def test_a_good_cluster_file_loads(tmp_path: Path) -> None:
    assert load_cluster_file(cluster(tmp_path)).hosts[0].name == "d"


@pytest.mark.parametrize("host_extra,top,needle", [
    ('adress = "x"\n', "", "unknown key 'adress'; did you mean 'address'?"),
    ('knwon_hosts = "kh"\n', "", "did you mean 'known_hosts'?"),
    ("", "clustr = 1\n", "unknown key 'clustr'; did you mean 'cluster'?"),
    ('sudo = "yes"\n', "", "sudo must be true or false"),
])
def test_unknown_keys_and_types_are_named(tmp_path: Path, host_extra: str, top: str, needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_cluster_file(cluster(tmp_path, host_extra, top))
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_cluster_and_service_keys(tmp_path: Path) -> None:
    f = cluster(tmp_path)
    f.write_text(f.read_text().replace('name = "t"', 'name = "t"\nkeep_lats = 3'))
    with pytest.raises(ConfigError, match="did you mean 'keep_last'"):
        load_cluster_file(f)
    f = cluster(tmp_path)
    f.write_text(f.read_text() + 'metric_port = 1\n')
    with pytest.raises(ConfigError, match="did you mean 'metrics_port'"):
        load_cluster_file(f)


def test_missing_identity_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    f = cluster(tmp_path)
    (tmp_path / "id").unlink()
    res = run("capture", "-c", str(f), "-o", str(tmp_path / "out"))
    assert res.exit_code == ExitStatus.USAGE, res.output
    assert f"identity file {tmp_path / 'id'} not found" in res.output
    assert not (tmp_path / "out").exists()  # nothing was done


def test_malformed_known_hosts_line_is_named_without_python_text(tmp_path: Path) -> None:
    f = cluster(tmp_path)
    good = (tmp_path / "kh").read_text()
    (tmp_path / "kh").write_text("# comment\n" + good + "[127.0.0.4]:2222 ssh-ed25519 AAAA!!notbase64\n")
    res = run("capture", "-c", str(f), "-o", str(tmp_path / "out"))
    assert res.exit_code == ExitStatus.USAGE, res.output
    assert "line 3 is not a known_hosts line (the key is not valid base64)" in res.output
    assert "Traceback" not in res.output and "binascii" not in res.output and "Error:" not in res.output
    (tmp_path / "kh").write_text("[127.0.0.4]:2222 ssh-rsa " + base64.b64encode(blob()).decode() + "\n")
    res = run("capture", "-c", str(f), "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and "does not match 'ssh-rsa'" in res.output


def test_cluster_env_is_honoured_and_never_falls_back_to_local(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    for cmd in (["capture", "-o", str(tmp_path / "out")], ["watch", "--max-polls", "1"],
                ["snapshot", "--store", str(tmp_path / "s")]):
        res = run(*cmd, env={"PDFORENSICS_CLUSTER": str(missing)})
        assert res.exit_code == ExitStatus.USAGE, (cmd, res.output)
        assert f"cluster file {missing} not found" in res.output
    assert not (tmp_path / "out").exists()


def test_default_cluster_file_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = cluster(tmp_path, 'bogus_key = 1\n')
    monkeypatch.delenv("PDFORENSICS_CLUSTER", raising=False)
    monkeypatch.setattr(cli_options, "DEFAULT_CLUSTER_FILE", f)
    res = run("capture", "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and "unknown key 'bogus_key'" in res.output and str(f) in res.output
    assert cli_options.configured_cluster_file(None) == str(f)
    monkeypatch.setattr(cli_options, "DEFAULT_CLUSTER_FILE", tmp_path / "absent.toml")
    assert cli_options.configured_cluster_file(None) is None


@pytest.mark.parametrize("opt,value", [("--deadline", "0"), ("--deadline", "-5"), ("--deadline", "10x"),
                                       ("--interval", "0s"), ("--history", "-1h")])
def test_durations_are_one_type_and_positive(tmp_path: Path, opt: str, value: str) -> None:
    res = run("capture", "--local", opt, value, "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and "duration" in res.output, res.output
    assert not (tmp_path / "out").exists()


def test_durations_accept_units() -> None:
    assert cli_options.DURATION.convert("1m30s", None, None) == 90.0
    assert cli_options.DURATION.convert(45, None, None) == 45.0
    res = run("snapshot", "--deadline", "0")
    assert res.exit_code == 2 and "must be > 0" in res.output


# -- surface ------------------------------------------------------------------------------------
def test_short_version_flag() -> None:
    res = run("-V")
    assert res.exit_code == 0 and res.output.startswith("pdforensics, version ")


def test_lab_fault_choices_are_listed() -> None:
    res = run("lab", "up", "--fault", "nope")
    assert res.exit_code == 2 and "'healthy'" in res.output and "'transfer-stuck'" in res.output
    assert "transfer-stuck" in run("lab", "up", "--help").output


def test_lab_status_json_and_text(tmp_path: Path) -> None:
    res = run("lab", "status", "--dir", str(tmp_path), "--json")
    doc = json.loads(res.output)
    assert res.exit_code == 0 and doc == {"dir": str(tmp_path), "fault": None, "running": False,
                                          "processes": []}
    text = run("lab", "status", "--dir", str(tmp_path)).output
    assert "not running" in text and "LabStatus(" not in text


def test_lab_fault_error_names_the_dir(tmp_path: Path) -> None:
    res = run("lab", "fault", "kv-full", "--dir", str(tmp_path))
    assert res.exit_code == 1 and f"pdforensics lab up --dir {tmp_path}" in res.output


def wedged_bundle(root: Path) -> Path:
    b = BundleBuilder(root)
    frozen = {GEN: 1000, FWD: 50.0, "sglang:num_running_reqs": 20, "sglang:token_usage": 0.4}
    b.add(host="d", role="decode", port=2, samples=[frozen for _ in range(3)])
    return b.write()


def test_verify_json(tmp_path: Path) -> None:
    bundle = wedged_bundle(tmp_path)
    res = run("verify", str(bundle), "--json")
    doc = json.loads(res.output)
    assert res.exit_code == 0 and doc["ok"] and doc["problems"] == []
    (bundle / "manifest.json").write_text((bundle / "manifest.json").read_text())  # unchanged
    next(bundle.glob("raw/*/*")).write_bytes(b"tampered")
    res = run("verify", str(bundle), "--json")
    doc = json.loads(res.output)
    assert res.exit_code == 1 and not doc["ok"] and doc["problems"]


def test_analyze_fail_on(tmp_path: Path) -> None:
    bundle = str(wedged_bundle(tmp_path))
    assert run("analyze", bundle).exit_code == 0  # the verdict alone never sets the exit code
    assert run("analyze", bundle, "--fail-on", "WEDGED").exit_code == int(ExitStatus.VERDICT) == 4
    assert run("analyze", bundle, "--fail-on", "degraded").exit_code == 4
    assert run("analyze", bundle, "--fail-on", "BOGUS").exit_code == 2


def test_triage_fail_on(tmp_path: Path) -> None:
    text = "\n".join(f'sglang:num_running_reqs{{tp_rank="0"}} {n}' for n in (1,))
    f = tmp_path / "m.txt"
    f.write_text("# TYPE sglang:num_running_reqs gauge\n" + text + "\n")
    plain = run("triage", str(f), "--json")
    verdict = json.loads(plain.stdout)["verdict"]
    failed = run("triage", str(f), "--fail-on", "DEGRADED")
    assert failed.exit_code == (4 if fails(verdict, "DEGRADED") else plain.exit_code)


def test_fail_on_levels() -> None:
    assert not fails("WEDGED", None)
    assert fails("WEDGED", "WEDGED") and fails("WEDGED", "DEGRADED")
    assert fails("DEGRADED", "DEGRADED") and not fails("DEGRADED", "WEDGED")
    assert fails("UNKNOWN", "DEGRADED") and not fails("HEALTHY", "DEGRADED")


def test_capture_exit_precedence() -> None:
    doc = {"collected": True, "status": "complete", "verdict": "WEDGED"}
    assert capture_exit(doc, None) == 0 and capture_exit(doc, "WEDGED") == 4
    assert capture_exit({**doc, "status": "partial"}, None) == 3
    assert capture_exit({**doc, "status": "partial"}, "WEDGED") == 4
    assert capture_exit({**doc, "collected": False, "status": "partial"}, "DEGRADED") == 6


def test_exit_table_is_documented() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("## Exit codes"):]
    for code in ExitStatus:
        if code < 100:
            assert f"| {int(code)} |" in table, code


# -- completeness -------------------------------------------------------------------------------
def entry(**kw: Any) -> ResultEntry:
    base: dict[str, Any] = dict(host="h", source="metrics", key="metrics.1", argv=None, url=None,
                                exit_status=0, duration_s=0.1, started_at=0.0, timed_out=False,
                                truncated=False, bytes=0, sha256=None, path=None, error=None)
    return ResultEntry(**{**base, **kw})


def test_expected_absences_and_collection_gaps(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("No devices were found\n")
    no_gpu = entry(source="nvidia_smi_query", key="nvidia_smi_query", exit_status=6, path="out.txt")
    not_installed = entry(source="nvidia_smi", key="nvidia_smi", exit_status=127)
    driver_gone = entry(source="nvidia_smi", key="nvidia_smi", exit_status=9)
    assert is_expected_absence(no_gpu, tmp_path) and is_expected_absence(not_installed)
    assert not is_expected_absence(driver_gone, tmp_path)
    timed_out = entry(key="discover", source="discover", timed_out=True, exit_status=None)
    refused = entry(url="http://127.0.0.1:1/metrics", error="connection refused", exit_status=None)
    curl_failed = entry(url="http://127.0.0.1:1/health", key="health", exit_status=7)
    not_found = entry(source="pyspy", key="pyspy.1", exit_status=127)
    assert failed_to_collect(entry()) is None and failed_to_collect(entry(exit_status=1)) is None
    assert failed_to_collect(entry(error="not run: deadline reached")) is None
    reasons = collection_reasons([no_gpu, not_installed, timed_out, refused, curl_failed, not_found],
                                 tmp_path)
    (reason,) = reasons
    assert reason.startswith("h: 4 source(s) timed out or could not run: discover (timed out)")
    assert collection_reasons([timed_out], tmp_path, unreachable=["h"]) == []


def test_fingerprint_is_the_ssh_keygen_form(tmp_path: Path) -> None:
    key = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    _kind, b64 = key.with_suffix(".pub").read_text().split()[:2]
    shown = subprocess.run(["ssh-keygen", "-l", "-f", str(key.with_suffix(".pub"))],
                           capture_output=True, text=True, check=True).stdout.split()[1]
    assert fingerprint(base64.b64decode(b64)) == shown and shown.startswith("SHA256:")


# -- the progress block -------------------------------------------------------------------------
def test_live_block_redraws_in_place() -> None:
    out = io.StringIO()
    live = LiveProgress(out, ["router-0", "decode-0"], 30.0)
    live.tick("decode-0", "ps", 0, 1, 9)
    live("decode-0", "found 1 service(s), 4 process(es)")
    live.tick("decode-0", "metrics", 2, 5, 12)
    live("router-0", "unreachable: refused")
    live.close()
    text = out.getvalue()
    assert "\x1b[3A" in text  # back to the block's first line: 1 header + 2 hosts
    last = text.rsplit("\x1b[3A", 1)[1]
    assert "decode-0" in last and "metrics" in last and "5/12" in last and "of 30s" in last
    assert "unreachable" in last
    size = len(out.getvalue())
    live.redraw()  # after close nothing more is drawn
    assert len(out.getvalue()) == size


def test_every_cluster_file_key_is_documented() -> None:
    from pdforensics.config.check import CLUSTER_KEYS, HOST_KEYS, SERVICE_KEYS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cluster-file.md").read_text()
    for key in CLUSTER_KEYS | HOST_KEYS | SERVICE_KEYS:
        assert f"| `{key}` |" in doc, key
    assert "PDFORENSICS_CLUSTER" in doc and "/etc/pdforensics/cluster.toml" in doc


def test_lab_up_over_a_running_lab_names_the_dir(tmp_path: Path) -> None:
    import os

    import psutil

    me = psutil.Process(os.getpid())
    (tmp_path / "lab.json").write_text(json.dumps({"pids": {"router": [me.pid, me.create_time()]}}))
    res = run("lab", "up", "--dir", str(tmp_path))
    assert res.exit_code == 1, res.output
    assert f"`pdforensics lab down --dir {tmp_path}`" in res.output
    status = json.loads(run("lab", "status", "--dir", str(tmp_path), "--json").output)
    assert status["running"] and status["processes"] == [{"name": "router", "pid": me.pid, "alive": True}]


def test_watch_status_line_fits_and_says_capturing(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from pdforensics.watch.status import Reporter

    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback=(80, 24): os.terminal_size((40, 24)))
    poll = {"poll": 3, "endpoints": 4, "failed": 0, "duration_s": 0.05, "state": "armed",
            "suspected": {"decode-0 decode:30001": {"keys": ["REQUESTS_FROZEN"], "held_s": 12.0}}}
    out = io.StringIO()
    tty = Reporter("a-long-cluster-name", "tty", out)
    tty("poll", poll)
    tty("capture_start", {"held_s": 60.0, "targets": ["decode-0"], "trigger": ["REQUESTS_FROZEN"]})
    lines = out.getvalue().split("\r\x1b[K")
    assert all(len(seg.split("\n")[-1]) <= 39 for seg in lines), lines  # one line at 40 columns
    assert "capturing" in lines[-1] and lines[-1].startswith("a-long-cluster-name | capturing")
    quiet = io.StringIO()
    q = Reporter("c", "quiet", quiet)
    q("poll", poll)
    assert quiet.getvalue() == ""
    q("capture_start", {"held_s": 60.0, "targets": ["decode-0"], "trigger": ["REQUESTS_FROZEN"]})
    assert "capturing" in quiet.getvalue() and "\x1b" not in quiet.getvalue()
