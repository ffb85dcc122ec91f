"""judge_safeguards against the shipped per-release table (no wheel needed)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.catalog.safeguard_table import SPECS, TABLE_VERSIONS, load_shipped_table
from pdforensics.catalog.safeguards import Safeguard, judge_safeguards, nearest_version

SERVE = ("python", "-m", "sglang.launch_server", "--model-path", "/m")


def by_key(items: tuple[Safeguard, ...]) -> dict[str, Safeguard]:
    return {s.key: s for s in items}


def test_shipped_table_covers_every_release_and_spec() -> None:
    table = load_shipped_table()
    assert sorted(table["versions"]) == sorted(TABLE_VERSIONS)
    for entry in table["versions"].values():
        assert set(entry["safeguards"]) == {s.key for s in SPECS}
        assert "sha256:" in entry["source"]


def test_defaults_per_era() -> None:
    old = by_key(judge_safeguards("0.4.6", SERVE, {}))
    assert old["pd_bootstrap_timeout"].state == "absent"
    assert old["pd_bootstrap_timeout"].fix == (
        "upgrade sglang: SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT arrived in 0.4.10")
    assert old["watchdog_timeout"].default == 300 and old["watchdog_timeout"].state == "ok"
    for v in ("0.4.10", "0.5.9", "0.5.23"):
        s = by_key(judge_safeguards(v, SERVE, {}))
        assert s["pd_waiting_timeout"].default == 300 and s["pd_waiting_timeout"].state == "ok"
        assert s["pd_heartbeat_interval"].default == 5.0
        assert s["pd_heartbeat_max_failure"].default == 2
        assert s["pd_bootstrap_timeout"].default_note == f"default of sglang {v}"


def test_states_and_fixes() -> None:
    env = {"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "100000",
           "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "inf",
           "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "abc"}
    s = by_key(judge_safeguards("0.5.23", (*SERVE, "--watchdog-timeout", "3599",
                                           "--crash-dump-folder", "/d"), env))
    assert s["pd_bootstrap_timeout"].state == "too_long"
    assert s["pd_bootstrap_timeout"].fix == "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300"
    assert s["pd_waiting_timeout"].state == "disabled"
    assert s["pd_heartbeat_max_failure"].state == "unknown"
    assert s["watchdog_timeout"].state == "ok" and s["watchdog_timeout"].source == "argv"
    assert s["soft_watchdog_timeout"].state == "unarmed"
    assert s["soft_watchdog_timeout"].fix == "--soft-watchdog-timeout 300"
    # 0.5.23 arms the CUDA core dump hooks itself when --crash-dump-folder is given
    assert s["cuda_user_coredump"].state == "ok" and "crash-dump-folder" in s["cuda_user_coredump"].detail
    s9 = by_key(judge_safeguards("0.5.9", (*SERVE, "--crash-dump-folder", "/d"), {}))
    assert s9["cuda_user_coredump"].state == "unarmed"
    assert s9["cuda_user_coredump"].fix == "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1"
    assert s9["metrics_for_all_schedulers"].state == "unarmed"


def test_nearest_version() -> None:
    known = list(TABLE_VERSIONS)
    assert nearest_version("0.5.9", known)[0] == "0.5.9"
    assert nearest_version("v0.5.12", known)[0] == "0.5.9"
    assert nearest_version("0.3.0", known)[0] == "0.4.6"
    assert nearest_version(None, known)[0] == "0.5.23"
    s = by_key(judge_safeguards("0.4.8", SERVE, {"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "5000"}))
    assert "0.4.8 not in the table" in s["watchdog_timeout"].default_note
    assert s["pd_waiting_timeout"].state == "too_long"  # set, and 0.4.10 reads it
    assert s["pd_bootstrap_timeout"].state == "unknown"  # unset, between 0.4.6 and 0.4.10


def test_cli_builds_the_table_from_a_tree(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from pdforensics.cli import main

    pkg = tmp_path / "sglang"
    (pkg / "srt" / "disaggregation").mkdir(parents=True)
    (pkg / "version.py").write_text('__version__ = "0.4.99"\n')
    (pkg / "srt" / "server_args.py").write_text(
        "class ServerArgs:\n    watchdog_timeout: float = 300\n\n"
        "def add(parser):\n    parser.add_argument('--watchdog-timeout', type=float, "
        "default=ServerArgs.watchdog_timeout)\n")
    (pkg / "srt" / "disaggregation" / "conn.py").write_text(
        "import os\nT = int(os.getenv('SGLANG_DISAGGREGATION_WAITING_TIMEOUT', 450))\n")
    out = tmp_path / "t.json"
    r = CliRunner().invoke(main, ["catalog", "safeguards", "--from", str(pkg), "-o", str(out)])
    assert r.exit_code == 0, r.output
    entry = json.loads(out.read_text())["versions"]["0.4.99"]["safeguards"]
    assert entry["watchdog_timeout"]["default"] == 300
    assert entry["pd_waiting_timeout"] == {
        "present": True, "default": 450, "default_expr": None, "type": "int",
        "origin": "srt/disaggregation/conn.py:2", "read_by": ["srt/disaggregation/conn.py"]}
    assert entry["pd_bootstrap_timeout"] == {"present": False}


def test_safeguards_shows_the_shipped_table_without_downloading() -> None:
    """`catalog safeguards` alone prints the table (it used to download releases to build it)."""
    import json

    from click.testing import CliRunner

    from pdforensics.cli import main

    r = CliRunner().invoke(main, ["catalog", "safeguards"])
    assert r.exit_code == 0, r.output
    head = r.output.splitlines()[0].split()
    assert head[:2] == ["safeguard", "set"] and "0.5.23" in head and "0.4.6" in head
    row = next(ln for ln in r.output.splitlines() if ln.startswith("pd_waiting_timeout "))
    assert "SGLANG_DISAGGREGATION_WAITING_TIMEOUT" in row and row.split()[-1] == "300"
    assert "absent" in row  # 0.4.6 had no such timeout
    doc = json.loads(CliRunner().invoke(main, ["catalog", "safeguards", "--json"]).output)
    assert set(doc) == {"schema", "specs", "versions"}
