#!/bin/sh
# --on-capture hook: open a ticket / post to chat when pdforensics watch captured a wedge.
# pdforensics sets PDFX_BUNDLE, PDFX_VERDICT, PDFX_STATUS, PDFX_CLUSTER, PDFX_SUMMARY,
# PDFX_TRIGGER (rule keys) and PDFX_SUSPECTS (servers) in the environment.
# Usage: pdforensics watch -c cluster.toml --on-capture examples/watch/on-capture-ticket.sh
# Set CHAT_WEBHOOK (a Slack/Mattermost incoming webhook) to post; otherwise it only logs.
set -eu

text="pdforensics: ${PDFX_CLUSTER} is ${PDFX_VERDICT} (${PDFX_TRIGGER}) on ${PDFX_SUSPECTS}.
${PDFX_SUMMARY}
bundle: ${PDFX_BUNDLE} (${PDFX_STATUS})
report: pdforensics report ${PDFX_BUNDLE}"

logger -t pdforensics-watch -- "$text" 2>/dev/null || printf '%s\n' "$text"

if [ -n "${CHAT_WEBHOOK:-}" ]; then
  python3 -c 'import json, sys; print(json.dumps({"text": sys.argv[1]}))' "$text" |
    curl -sS --max-time 10 -H 'content-type: application/json' --data @- "$CHAT_WEBHOOK"
fi
