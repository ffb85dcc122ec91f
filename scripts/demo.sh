#!/usr/bin/env bash
# The lab demo: a wedged PD cluster (decode KV transfer stuck) on three loopback SSH hosts,
# captured over real SSH, analysed and reported. The lab stays up afterwards so you can look
# around; the last lines say how, and how to take it down. Usage: scripts/demo.sh [FAULT]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
fault=${1:-transfer-stuck}
lab=$PWD/lab-run
pdfx=.venv/bin/pdforensics
$pdfx lab down --dir "$lab" >/dev/null 2>&1 || true
# a failed start leaves nothing running; a finished demo leaves the lab up on purpose
trap '$pdfx lab down --dir "$lab" >/dev/null 2>&1 || true' ERR INT TERM
$pdfx lab up --ssh --fault "$fault" --dir "$lab"
echo
set +e
$pdfx capture -c "$lab/cluster.toml" -o "$PWD/bundles" --markdown "$PWD/bundles/last-summary.md"
rc=$?
set -e
trap - ERR INT TERM
bundle=$(ls -1dt "$PWD"/bundles/lab-* | head -n 1)
echo
echo "bundle:  $bundle"
[ -f "$bundle/report.html" ] && echo "report:  $bundle/report.html"
[ -f "$PWD/bundles/last-summary.md" ] && echo "summary: $PWD/bundles/last-summary.md (Markdown, to paste)"
echo "capture exit code: $rc (0 complete, 3 partial, 6 nothing collected; see README, Exit codes)"
echo
echo "The lab is still up (fault: $fault). Look around:"
echo "  $pdfx lab status --dir $lab"
echo "  $pdfx analyze $bundle"
echo "  $pdfx lab fault healthy --dir $lab    # or another fault, then capture again"
echo "Take it down:"
echo "  $pdfx lab down --dir $lab"
