#!/usr/bin/env bash
# The lab demo: a wedged PD cluster (decode KV transfer stuck) on three loopback SSH hosts,
# captured over real SSH, analysed and reported. Usage: scripts/demo.sh [FAULT]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
fault=${1:-transfer-stuck}
lab=$PWD/lab-run
.venv/bin/pdforensics lab down --dir "$lab" >/dev/null 2>&1 || true
trap '.venv/bin/pdforensics lab down --dir "$lab" >/dev/null 2>&1 || true' EXIT
.venv/bin/pdforensics lab up --ssh --fault "$fault" --dir "$lab"
echo
set +e
.venv/bin/pdforensics capture -c "$lab/cluster.toml" -o "$PWD/bundles"
rc=$?
set -e
bundle=$(ls -1dt "$PWD"/bundles/lab-* | head -n 1)
echo
echo "bundle:  $bundle"
[ -f "$bundle/report.html" ] && echo "report:  $bundle/report.html"
echo "capture exit code: $rc (0 complete, 3 partial)"
