#!/bin/sh
# --on-capture hook: pack the bundle for a ticket attachment and keep a line per incident.
# Usage: pdforensics watch ... --on-capture examples/watch/on-capture-archive.sh
set -eu
out="${ARCHIVE_DIR:-/var/lib/pdforensics/outbox}"
mkdir -p "$out"
name=$(basename "$PDFX_BUNDLE")
tar -C "$(dirname "$PDFX_BUNDLE")" -czf "$out/$name.tar.gz" "$name"
printf '%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$PDFX_VERDICT" "$PDFX_TRIGGER" "$out/$name.tar.gz" \
  >> "$out/incidents.tsv"
echo "$out/$name.tar.gz"
