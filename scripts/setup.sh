#!/usr/bin/env bash
# Install what pdforensics, its lab and its tests need: Debian packages and a .venv.
# Idempotent; safe to run again. Usage: scripts/setup.sh [--test]
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

# Debian packages: sshd for the lab's loopback hosts, sudo for the non-root login,
# curl/ss/ps for the collectors; chromium and prometheus for the report and watch tests.
pkgs=(openssh-server openssh-client sudo curl iproute2 procps)
# slurm-wlm and munge: a real single-node Slurm for the Slurm tests (tests/support/slurm.py).
[ "$want_tests" = 1 ] && pkgs+=(chromium prometheus slurm-wlm munge faketime)
say() { echo "setup: $*" >&2; }  # every step says what it does, so a slow one never looks hung
t0=$SECONDS
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  say "installing Debian packages: ${missing[*]} (apt-get; a minute or more on a fresh machine)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  say "Debian packages installed ($((SECONDS - t0)) s)"
else
  say "Debian packages already installed: ${pkgs[*]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating the virtualenv .venv ($("$PY" --version 2>&1))"
  "$PY" -m venv .venv
fi
t1=$SECONDS
say "installing pdforensics and its dev extras into .venv: paramiko, click, jinja2, psutil," \
    "prometheus-client, nvidia-ml-py, py-spy, setproctitle, smg (the lab's router), pytest," \
    "hypothesis, ruff, mypy (pip, quiet; up to a few minutes the first time)"
# pip and the setuptools build print hundreds of deprecation lines on success: keep them in
# a log and show it (without the index-location noise) only when the install fails.
log=$(mktemp "${TMPDIR:-/tmp}/pdforensics-setup.XXXXXX")
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' >"$log" 2>&1; then
  grep -v "^WARNING: Location" "$log" >&2 || true
  echo "setup: pip install -e '.[dev]' failed (the log above; kept in $log)" >&2
  exit 1
fi
rm -f "$log"
.venv/bin/python -c "import pdforensics, paramiko, setproctitle" \
  || { echo "setup: the virtualenv is incomplete" >&2; exit 1; }
say "ready: .venv/bin/pdforensics $(.venv/bin/pdforensics --version 2>/dev/null | awk '{print $NF}')" \
    "(pip $((SECONDS - t1)) s, setup $((SECONDS - t0)) s)"
