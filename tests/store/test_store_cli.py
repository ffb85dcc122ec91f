"""baseline / diff through the CLI on a synthetic store; filing; the store lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.model import ClusterSpec, HostSpec
from pdforensics.store.filing import file_capture, file_if_configured
from pdforensics.store.index import open_index
from pdforensics.store.lock import StoreBusy, store_lock
from tests.support.fleet import write_capture
from tests.support.store import T0, add, cluster

ENV = (("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "512"),)


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


@pytest.fixture
def store(tmp_path: Path) -> Path:
    s = tmp_path / "store"
    add(s, T0, "HEALTHY", name="s1")
    add(s, T0 + 3600, "HEALTHY", flags=("--log-level", "debug"), name="s2")
    add(s, T0 + 7200, "WEDGED", flags=("--log-level", "debug"), env=ENV, name="s3")
    return s


def test_baseline_default_is_newest_healthy(store: Path) -> None:
    code, out = run("baseline", "show", "--store", str(store), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["baseline"]["name"] == "s2" and doc["explicit"] is False


def test_baseline_set_show_clear(store: Path) -> None:
    code, out = run("baseline", "set", "s1", "--store", str(store))
    assert code == 0 and "s1" in out
    doc = json.loads(run("baseline", "show", "--store", str(store), "--json")[1])
    assert doc["baseline"]["name"] == "s1" and doc["explicit"] is True
    assert "set explicitly" in run("baseline", "show", "--store", str(store))[1]
    assert run("baseline", "clear", "--store", str(store))[0] == 0
    assert json.loads(run("baseline", "show", "--store", str(store), "--json")[1])["explicit"] is False


def test_baseline_set_from_a_path_outside_files_it(store: Path, tmp_path: Path) -> None:
    outside = write_capture(tmp_path / "elsewhere", cluster(), T0 - 3600, verdict="HEALTHY",
                            name="imported")
    code, out = run("baseline", "set", str(outside), "--store", str(store))
    assert code == 0, out
    with open_index(store) as index:
        snap = index.get("imported")
        assert snap is not None and snap.origin == "import" and snap.path.is_dir()
        baseline = index.explicit_baseline("synth")
        assert baseline is not None and baseline.name == "imported"


def test_baseline_set_unknown_name(store: Path) -> None:
    code, out = run("baseline", "set", "nope", "--store", str(store))
    assert code == 1 and "neither a bundle directory nor a snapshot" in out


def test_diff_defaults_baseline_to_newest(store: Path) -> None:
    code, out = run("diff", "--store", str(store), "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["a"].endswith("s2") and doc["b"].endswith("s3")
    assert [c["key"] for c in doc["changes"]] == ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES"]


def test_diff_names_keywords_and_paths(store: Path) -> None:
    doc = json.loads(run("diff", "s1", "newest", "--store", str(store), "--json")[1])
    keys = {c["key"]: c for c in doc["changes"]}
    assert set(keys) == {"SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "--log-level"}
    assert (keys["--log-level"]["before"], keys["--log-level"]["after"]) == (None, "debug")
    # one argument: baseline -> that bundle (here given by path)
    one = json.loads(run("diff", str(store / "bundles" / "s1"), "--store", str(store), "--json")[1])
    assert one["a"].endswith("s2") and one["b"].endswith("s1")
    # two paths need no store at all
    code, out = run("diff", str(store / "bundles" / "s1"), str(store / "bundles" / "s3"),
                    "--store", str(store / "missing"))
    assert code == 0 and "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES" in out
    assert not (store / "missing").exists()


def test_diff_same_bundle_says_so(store: Path) -> None:
    code, out = run("diff", "s3", "s3", "--store", str(store))
    assert code == 0 and "no configuration changes" in out and "same bundle" in out


def test_diff_without_baseline(tmp_path: Path) -> None:
    s = tmp_path / "store"
    add(s, T0, "WEDGED", name="w1")
    code, out = run("diff", "--store", str(s))
    assert code == 1 and "no baseline" in out


def test_filing_is_idempotent_and_names_do_not_collide(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a = write_capture(tmp_path / "one", cluster(), T0, verdict="HEALTHY", name="same")
    b = write_capture(tmp_path / "two", cluster(), T0 + 60, verdict="WEDGED", name="same")
    sa = file_capture(store, a)
    sb = file_capture(store, b)
    assert sa.name == "same" and sb.name == "same-2"
    assert file_capture(store, sa.path).id == sa.id  # already in the store: not copied again
    with open_index(store) as index:
        assert [s.name for s in index.snapshots()] == ["same", "same-2"]
        same, same_2 = index.get("same"), index.get("same-2")
        assert same_2 is not None and same_2.verdict == "WEDGED"
        assert same is not None and set(same.fingerprints) == {"router-0", "prefill-0", "decode-0"}


def test_capture_files_when_a_store_is_configured(tmp_path: Path, monkeypatch) -> None:
    bundle = write_capture(tmp_path / "out", cluster(), T0, verdict="HEALTHY", name="cap")
    spec = ClusterSpec(name="synth", hosts=(HostSpec("h", "local"),))
    monkeypatch.delenv("PDFORENSICS_STORE", raising=False)
    assert file_if_configured(spec, bundle) is None
    with_store = ClusterSpec(name="synth", hosts=spec.hosts, store=str(tmp_path / "cfg-store"))
    got = file_if_configured(with_store, bundle)
    assert got is not None and got.snapshot is not None and got.snapshot.verdict == "HEALTHY"
    assert got.snapshot.path.is_dir() and got.snapshot.path.parent == tmp_path / "cfg-store" / "bundles"
    monkeypatch.setenv("PDFORENSICS_STORE", str(tmp_path / "env-store"))
    again = file_if_configured(spec, bundle)
    assert again is not None and again.snapshot is not None
    assert again.snapshot.path.is_relative_to(tmp_path / "env-store")
    # a broken store is reported, never raised: the capture itself succeeded
    (tmp_path / "blocked").write_text("a file, not a directory")
    monkeypatch.setenv("PDFORENSICS_STORE", str(tmp_path / "blocked"))
    broken = file_if_configured(spec, bundle)
    assert broken is not None and broken.snapshot is None and broken.error


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, f"{os.getpid()}\\n".encode(), 0)
print("held", flush=True)
time.sleep(60)
"""


def test_lock_held_elsewhere_fails_at_once_with_exit_5(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store / ".lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        cfile = tmp_path / "cluster.toml"
        cfile.write_text('[cluster]\nname = "x"\n[[hosts]]\nname = "h"\naddress = "local"\n')
        t = time.monotonic()
        code, out = run("snapshot", "-c", str(cfile), "--store", str(store))
        assert code == 5, out
        assert time.monotonic() - t < 5
        assert f"pid {holder.pid}" in out and "locked by another run" in out
    finally:
        holder.kill()
        holder.wait()
    with store_lock(store):  # the kernel dropped the dead holder's lock
        with pytest.raises(StoreBusy):
            with store_lock(store):
                pass
    assert os.path.exists(store / ".lock")


def test_baseline_diff_for_the_report(store: Path, tmp_path: Path, monkeypatch) -> None:
    from pdforensics.store.changes import baseline_diff

    monkeypatch.delenv("PDFORENSICS_STORE", raising=False)
    wedge = store / "bundles" / "s3"
    assert baseline_diff(wedge) is None  # no store configured
    assert baseline_diff(wedge, tmp_path / "missing") is None
    monkeypatch.setenv("PDFORENSICS_STORE", str(store))
    got = baseline_diff(wedge)
    assert got is not None and got.baseline.name == "s2" and not got.explicit
    assert [c.key for c in got.result.changes] == ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES"]
    again = baseline_diff(store / "bundles" / "s2")
    assert again is not None and again.result.changes == ()


def test_one_argument_diff_uses_that_bundles_cluster(store: Path) -> None:
    add(store, T0, "HEALTHY", name="o1", cluster_name="other")
    add(store, T0 + 60, "WEDGED", env=ENV, name="o2", cluster_name="other")
    add(store, T0 + 99999, "HEALTHY", name="s9")  # synth is the newest cluster
    doc = json.loads(run("diff", "o2", "--store", str(store), "--json")[1])
    assert doc["a"].endswith("o1") and doc["b"].endswith("o2")
    assert json.loads(run("baseline", "show", "--store", str(store), "--json")[1])["cluster"] == "synth"
    other = json.loads(run("baseline", "show", "--name", "other", "--store", str(store), "--json")[1])
    assert other["baseline"]["name"] == "o1"
    assert run("baseline", "show", "--name", "nope", "--store", str(store))[0] == 1
