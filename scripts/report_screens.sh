#!/usr/bin/env bash
# The report's first screen for docs/report.md (issue 33): one lab over loopback sshd, three
# captures -- transfer-stuck (a wedge), breaker-open (an outage: every prefill's breaker open),
# and healthy after the recovery (a capture whose evidence window starts after it) -- each
# measured and shot at 1280x800 in headless Chromium by benchmarks/report_fold.py.
#   scripts/report_screens.sh [OUT_DIR]      (default: docs/screenshots)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-docs/screenshots}")
work=$(mktemp -d /tmp/pdfx-screens.XXXXXX)
pdfx=.venv/bin/pdforensics
trap '$pdfx lab down --dir "$work/lab" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

$pdfx lab up --ssh --dir "$work/lab" --base-port 23000 >/dev/null
cluster="$work/lab/cluster.toml"
shot() {  # NAME: a capture of the lab as it is now, its JSON line kept
  $pdfx capture -c "$cluster" -o "$work/b-$1" --json "${@:2}" >"$work/$1.json" || true
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d["status"], d["verdict"], d["report"])' \
    "$work/$1.json" "$1"
}
sleep 3
$pdfx lab fault --dir "$work/lab" transfer-stuck >/dev/null; sleep 10; shot transfer-stuck
$pdfx lab fault --dir "$work/lab" breaker-open >/dev/null; sleep 12; shot breaker-open --since 10s
$pdfx lab fault --dir "$work/lab" healthy >/dev/null; recovered=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 25; shot healthy-after-recovery --since "$recovered"
pages=()
for name in transfer-stuck breaker-open healthy-after-recovery; do
  pages+=("report-$name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["report"])' "$work/$name.json")")
done
flock /tmp/pdforensics-e2e.lock .venv/bin/python benchmarks/report_fold.py "$out" "${pages[@]}"
