#!/usr/bin/env bash
# What a user installs is what we test: build the wheel and sdist, install the wheel with its
# lab extra into a fresh venv outside the checkout, and from a directory outside the checkout
# check every file and module of the source tree is in the installed copy, every command's
# --help and the version, then one real lab capture over real sshd with the installed tool.
# Needs the Debian packages of scripts/setup.sh --test. Usage: scripts/test_wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/pdforensics-wheel.XXXXXX")
lab=$work/lab
cleanup() {
  [ -x "$work/venv/bin/pdforensics" ] && [ -d "$lab" ] \
    && "$work/venv/bin/pdforensics" lab down --dir "$lab" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { echo "wheel: $*" >&2; }
quiet() {  # run quietly; show the output only when it fails
  local log="$work/step.log"
  if ! "$@" >"$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" >&2 || true
    echo "wheel: failed: $*" >&2
    return 1
  fi
}

step "building the wheel and the sdist from a clean copy of the tree"
# a copy of what git would commit: no egg-info, build/ or caches of the checkout can fill gaps
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$work/src"
quiet .venv/bin/python -m build --outdir "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/pdforensics-*.whl)
version=$(basename "$wheel" | cut -d- -f2)
quiet .venv/bin/twine check --strict "$work"/dist/*

step "installing $(basename "$wheel") with [lab] into a fresh venv outside the checkout"
python3 -m venv "$work/venv"
quiet "$work/venv/bin/python" -m pip install --disable-pip-version-check "$wheel[lab]"

cd "$work"  # nothing below runs from the checkout
step "files, imports, --help of every command, version"
PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" -I "$repo/scripts/wheel_check.py" "$work/src" "$version"

step "a lab capture over real sshd with the installed pdforensics"
pdfx=$work/venv/bin/pdforensics
base=$("$work/venv/bin/python" -I -c '
import random, socket
def free(p):
    for a in ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"):
        with socket.socket() as s:
            try: s.bind((a, p))
            except OSError: return False
    return True
for b in random.sample(range(20000, 32000, 6), 200):
    if all(free(p) for p in range(b, b + 6)): print(b); break')
quiet "$pdfx" lab up --ssh --fault transfer-stuck --dir "$lab" --base-port "$base"
set +e
"$pdfx" capture -c "$lab/cluster.toml" -o "$work/bundles" -q
rc=$?
set -e
bundle=$(ls -1d "$work"/bundles/*/ | head -n 1)
bundle=${bundle%/}
[ -d "$bundle" ] || { echo "wheel: capture wrote no bundle (exit $rc)" >&2; exit 1; }
verdict=$("$pdfx" analyze "$bundle" --json | "$work/venv/bin/python" -I -c 'import json, sys; print(json.load(sys.stdin)["verdict"])')
[ "$verdict" = "WEDGED" ] || { echo "wheel: expected verdict WEDGED, got $verdict (capture exit $rc)" >&2; exit 1; }
"$pdfx" report "$bundle" -o "$work/report.html" >/dev/null
"$pdfx" verify "$bundle" >/dev/null
quiet "$pdfx" lab down --dir "$lab"
for page in "$bundle/report.html" "$work/report.html"; do
  dom=$(timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --user-data-dir="$work/chromium" --dump-dom "file://$page" 2>/dev/null)
  grep -q "WEDGED" <<<"$dom" || { echo "wheel: $page did not render the verdict in chromium" >&2; exit 1; }
done
step "ok: capture exit $rc, verdict $verdict, report renders ($(( $(date +%s) - started )) s)"
