"""The end of a capture on the terminal: what an on-call engineer needs, in a dozen lines.

The verdict, every critical finding, how many more there are, the top finding's next step,
since when the cluster has been stuck (the earliest log evidence, when the logs tell), the
gaps that are not expected absences, and where the bundle and the report are.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from pdforensics.terminal import field

Echo = Callable[[str], None]
GAPS_SHOWN = 15


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def print_summary(doc: dict[str, Any], echo: Echo) -> None:
    """The text summary of a capture document (outcome_json plus verdict, findings, paths)."""
    status = doc["status"] + (" (nothing collected)" if not doc.get("collected", True) else "")
    echo(f"status: {status}")
    for reason in doc["partial_reasons"]:
        echo(f"  partial: {field(reason)}")
    if doc.get("verdict"):
        _verdict(doc, echo)
    gaps = doc["gaps"]
    if gaps:
        echo(f"gaps: {len(gaps)}")
        for g in gaps[:GAPS_SHOWN]:
            echo(f"  {field(g['host'])} {field(g['key'])}: {field(g['error'])}"
                 + (f" ({field(g['stderr'])})" if g["stderr"] else ""))
        if len(gaps) > GAPS_SHOWN:
            echo(f"  ... {len(gaps) - GAPS_SHOWN} more in manifest.json")
    echo(f"bundle: {doc['bundle']}")
    if doc.get("report"):
        echo(f"report: {doc['report']}")
    if doc.get("stored"):
        echo(f"store: {doc['stored'].get('path') or doc['stored'].get('error')}")


def _verdict(doc: dict[str, Any], echo: Echo) -> None:
    findings = doc["findings"]
    echo(f"verdict: {doc['verdict']}")
    critical = [f for f in findings if f["severity"] == "critical"]
    shown = critical or findings[:1]
    for f in shown:
        echo(f"  [{f['severity']}] {f['key']}: {field(f['title'])}")
    if len(findings) > len(shown):
        echo(f"  ... {len(findings) - len(shown)} more (pdforensics analyze {doc['bundle']})")
    if findings:
        echo(f"next: {field(findings[0]['next_step'])}")
    if doc.get("stuck_since") and doc["verdict"] != "HEALTHY":
        echo(f"since: {_utc(doc['stuck_since'])} (earliest log evidence)")
