"""A day of lab snapshots: healthy, a harmless log-level change, then an SGLANG_* env var
(with a misspelled flag next to it) and the wedge. timeline and diff must point at the env var.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.catalog import load_shipped_catalog
from pdforensics.cli import main
from pdforensics.lab import lab_down, set_fault
from pdforensics.store.index import open_index
from pdforensics.store.retention import RetentionPolicy, prune
from tests.store.store_lab import lab_up_at, lab_up_in
from tests.support import ports

pytestmark = pytest.mark.lab

BASE_PORT = ports.block()  # found free at run time
LOG = ["--log-level", "debug"]
TYPO = ["--chunked-prefil-size", "4096"]
ENV_VAR = "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES"


def cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_a_day_of_snapshots(tmp_path: Path) -> None:
    lab_dir, store = tmp_path / "lab", tmp_path / "store"
    cat = load_shipped_catalog()
    base = BASE_PORT

    def phase(n: int, args: dict, env: dict, fault: str = "healthy") -> list[tuple[int, str]]:
        nonlocal base
        if base == BASE_PORT and not (lab_dir / "cluster.toml").exists():
            info = lab_up_in(lab_dir, BASE_PORT, extra_args=args, extra_env=env)
            base = info.ports.prefill
        else:
            info = lab_up_at(lab_dir, base, extra_args=args, extra_env=env)
        try:
            if fault != "healthy":
                set_fault(lab_dir, fault)
                time.sleep(2.5)
            # --fail-on: a cron job that wants a sick cluster to fail (exit 4), as before
            return [cli("snapshot", "-c", str(info.cluster_file), "--store", str(store),
                        "--fail-on", "DEGRADED") for _ in range(n)]
        finally:
            lab_down(lab_dir)

    # morning: the known-good configuration, twice
    assert phase(2, {}, {}) == [(0, ""), (0, "")]
    # noon: a harmless change, still healthy (quiet, exit 0)
    both_log = {"prefill": LOG, "decode": LOG}
    assert phase(1, both_log, {}) == [(0, "")]
    # evening: an env var on decode (and a typo'd flag) and the wedge starts
    ((code, out),) = phase(1, {"prefill": LOG, "decode": LOG + TYPO}, {"decode": {ENV_VAR: "512"}},
                           fault="transfer-stuck")
    assert code == 4, out
    assert out.startswith("pdforensics snapshot: lab: WEDGED: ") and "DECODE_TRANSFER_STUCK" in out

    with open_index(store) as index:
        s1, s2, s3, s4 = (s.name for s in index.snapshots("lab"))

    # timeline: the env var is the first suspect; the log-level change ranks below it
    code, out = cli("timeline", "--store", str(store), "--json")
    assert code == 0, out
    t = json.loads(out)
    assert t["last_healthy"]["name"] == s3 and t["first_unhealthy"]["name"] == s4
    first = t["suspects"][0]
    assert (first["scope"], first["kind"], first["key"]) == ("decode-0/decode", "env", ENV_VAR)
    assert (first["before"], first["after"], first["first_seen"]) == (None, "512", s4)
    assert first["seen_healthy"] is False and first["relevance"] == "high"
    keys = [s["key"] for s in t["suspects"]]
    logs = [s for s in t["suspects"] if s["key"] == "--log-level"]
    assert {s["scope"] for s in logs} == {"prefill-0/prefill", "decode-0/decode"}
    assert all(keys.index(ENV_VAR) < i for i, k in enumerate(keys) if k == "--log-level")
    assert all(s["first_seen"] == s3 and s["seen_healthy"] for s in logs)
    assert not [s for s in t["suspects"] if s["kind"] in ("layout", "service", "host", "package")]

    # diff from the morning's baseline: both changes with before/after, catalog facts
    assert cli("baseline", "set", s1, "--store", str(store))[0] == 0
    code, out = cli("diff", "--store", str(store), "--json")
    assert code == 0, out
    d = json.loads(out)
    assert d["a"].endswith(s1) and d["b"].endswith(s4)
    by = {(c["scope"], c["key"]): c for c in d["changes"]}
    env = by[("decode-0/decode", ENV_VAR)]
    assert (env["before"], env["after"]) == (None, "512")
    info = cat.env(ENV_VAR)
    assert info is not None and env["default"] == info.default == 0 and "Mooncake" in env["help"]
    log = by[("decode-0/decode", "--log-level")]
    assert (log["before"], log["after"], log["default"]) == (None, "debug", "info")
    typo = by[("decode-0/decode", "--chunked-prefil-size")]
    assert (typo["before"], typo["after"]) == (None, "4096")
    assert typo["note"] == f"unknown to sglang {cat.version}" and typo["help"] is None
    assert [c["key"] for c in d["changes"]].index(ENV_VAR) == 0
    assert not [n for n in d["notes"] if "catalog is for" in n]  # the lab runs the catalog's sglang
    code, text = cli("diff", "--store", str(store))
    assert f"[high] env {ENV_VAR}: added: 512" in text
    assert "default 0" in text and "[low] flag --log-level: added: debug" in text
    assert "flag --chunked-prefil-size: added: 4096" in text
    assert f"unknown to sglang {cat.version}" in text

    # retention with nothing to spare keeps the baseline and what the timeline named
    with open_index(store) as index:
        gone = prune(index, RetentionPolicy(keep_last=0, keep_days=0), now=time.time() + 400 * 86400)
        assert [s.name for s in gone] == [s2]
        assert [s.name for s in index.snapshots("lab")] == [s1, s3, s4]
