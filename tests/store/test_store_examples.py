"""examples/: the crontab line and the timer's ExecStart run as written against the lab.

Only the documented placeholders are substituted: PATH, PDFORENSICS_CLUSTER and
PDFORENSICS_STORE in the crontab; the two Environment= values and the executable's path
in the service.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.lab import lab_down
from pdforensics.store.index import open_index
from tests.store.store_lab import lab_up_in
from tests.support import ports

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE_PORT = ports.block()  # found free at run time
VENV_BIN = Path(sys.executable).parent
PLACEHOLDER_EXE = "/usr/local/bin/pdforensics"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("exlab") / "lab"
    try:
        info = lab_up_in(d, BASE_PORT, fault="healthy")
        yield info.cluster_file
    finally:
        lab_down(d)


def crontab() -> tuple[dict[str, str], list[str]]:
    """Environment assignments and job lines, as cron reads them."""
    env: dict[str, str] = {}
    jobs: list[str] = []
    for line in (EXAMPLES / "crontab").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)", line)
        if m:
            env[m.group(1)] = m.group(2).strip().strip('"')
        else:
            jobs.append(line)
    return env, jobs


def unit(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def systemd_argv(exec_start: str, env: dict[str, str]) -> list[str]:
    """ExecStart= as systemd expands it: ${VAR} stays one word, $VAR splits at whitespace."""
    words: list[str] = []
    for word in shlex.split(exec_start):
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", word):
            words += env.get(word[1:], "").split()
        else:
            words.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), word))
    return words


def snapshots(store: Path) -> list[str]:
    with open_index(store, create=False) as index:
        return [f"{s.name}:{s.verdict}" for s in index.snapshots()]


@pytest.mark.lab
def test_crontab_line_runs_as_written(lab: Path, tmp_path: Path) -> None:
    env, jobs = crontab()
    assert set(env) == {"PATH", "PDFORENSICS_CLUSTER", "PDFORENSICS_STORE"}  # the documented ones
    (job,) = jobs
    fields = job.split(None, 5)
    assert len(fields) == 6 and fields[0] == "*/15"
    command = fields[5]
    store = tmp_path / "store"
    cron_env = {"HOME": os.environ.get("HOME", "/root"), "LOGNAME": "root", "SHELL": "/bin/sh",
                **env, "PATH": f"{VENV_BIN}:{env['PATH']}", "PDFORENSICS_CLUSTER": str(lab),
                "PDFORENSICS_STORE": str(store)}
    r = subprocess.run(["/bin/sh", "-c", command], env=cron_env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr == ""  # quiet while healthy: cron mails nothing
    (snap,) = snapshots(store)
    assert snap.endswith(":HEALTHY")


@pytest.mark.lab
def test_timer_service_execstart_runs_as_written(lab: Path, tmp_path: Path) -> None:
    service = unit(EXAMPLES / "pdforensics-snapshot.service")
    timer = unit(EXAMPLES / "pdforensics-snapshot.timer")
    assert timer["Unit"] == ["pdforensics-snapshot.service"]
    assert service["Type"] == ["oneshot"]
    env = dict(v.split("=", 1) for v in service["Environment"])
    assert set(env) == {"PDFORENSICS_CLUSTER", "PDFORENSICS_STORE"}  # the documented ones
    store = tmp_path / "store"
    env.update(PDFORENSICS_CLUSTER=str(lab), PDFORENSICS_STORE=str(store))
    (exec_start,) = service["ExecStart"]
    argv = systemd_argv(exec_start, env)
    assert argv[0] == PLACEHOLDER_EXE
    argv[0] = str(VENV_BIN / "pdforensics")
    run_env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **env}
    r = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr == ""
    (snap,) = snapshots(store)
    assert snap.endswith(":HEALTHY")


def test_units_pass_systemd_analyze(tmp_path: Path) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed: unit files not verified")
    text = (EXAMPLES / "pdforensics-snapshot.service").read_text()
    assert PLACEHOLDER_EXE in text
    (tmp_path / "pdforensics-snapshot.service").write_text(
        text.replace(PLACEHOLDER_EXE, str(VENV_BIN / "pdforensics")))
    shutil.copy(EXAMPLES / "pdforensics-snapshot.timer", tmp_path)
    r = subprocess.run([tool, "verify", str(tmp_path / "pdforensics-snapshot.timer"),
                        str(tmp_path / "pdforensics-snapshot.service")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    (calendar,) = unit(EXAMPLES / "pdforensics-snapshot.timer")["OnCalendar"]
    r = subprocess.run([tool, "calendar", calendar], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "00/15:00" in r.stdout, r.stdout + r.stderr
