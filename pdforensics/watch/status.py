"""What watch prints: one rewritten status line on a terminal, plain lines for a journal,
or one JSON object per event."""

from __future__ import annotations

import json
import shutil
import sys
import time
from datetime import datetime
from typing import Any, TextIO

from pdforensics.terminal import write_control


def status_text(cluster: str, f: dict[str, Any], captures: int) -> str:
    """``lab | poll 12 4/4 ok 0.03s | armed | suspected decode-0 decode:30001 ...``."""
    ok = f["endpoints"] - f["failed"]
    bits = [cluster, f"poll {f['poll']} {ok}/{f['endpoints']} ok {f['duration_s']:.2f}s", f["state"]]
    sus = f.get("suspected") or {}
    if sus:
        bits.append("suspected " + "; ".join(
            f"{k} {','.join(v['keys'])} {v['held_s']:.0f}s" for k, v in sus.items()))
    else:
        bits.append("no wedge signature")
    if f.get("note"):
        bits.append(str(f["note"]))
    bits.append(f"captures {captures}")
    return " | ".join(bits)


def event_text(event: str, f: dict[str, Any]) -> str:
    if event == "captured":
        hook = f.get("hook")
        tail = ""
        if hook is not None:
            tail = " hook ok" if hook.get("error") is None else f" hook {hook.get('error')}"
        return (f"captured {f['bundle']} ({f['status']}): {f.get('verdict') or 'no verdict'}"
                f" [{','.join(f.get('trigger', []))}]{tail}")
    if event == "capture_start":
        return (f"wedge signature held {f['held_s']:.0f}s on {', '.join(f['targets'])} "
                f"({', '.join(f['trigger'])}): capturing")
    return event.replace("_", " ") + ": " + ", ".join(f"{k}={v}" for k, v in f.items())


class Reporter:
    """mode: tty (status line rewritten in place), plain (a line when the state changes),
    verbose (a line for every poll), quiet (no poll lines, only events), json (every event,
    one object per line)."""

    def __init__(self, cluster: str, mode: str, out: TextIO | None = None):
        self.cluster = cluster
        self.mode = mode
        self.out = out or sys.stdout
        self.captures = 0
        self._last_plain = ""
        self._line = False

    def __call__(self, event: str, fields: dict[str, Any]) -> None:
        if event == "captured":
            self.captures += 1
        if self.mode == "json":
            self._write(json.dumps({"event": event, "at": round(time.time(), 3), **fields},
                                   default=str) + "\n")
            return
        if event == "poll" and self.mode == "quiet":
            return  # -q: the events (capture start, captured) only
        if event == "poll":
            line = status_text(self.cluster, fields, self.captures)
            if self.mode == "tty":
                self._status(line)
                return
            key = json.dumps([fields["state"], fields.get("note"), fields.get("errors"),
                              {k: v["keys"] for k, v in (fields.get("suspected") or {}).items()}])
            if key != self._last_plain or self.mode == "verbose":
                self._last_plain = key
                errors = fields.get("errors") or []
                self._write(line + (" | errors: " + "; ".join(errors) if errors else "") + "\n")
            return
        stamp = datetime.now().strftime("%H:%M:%S")
        prefix = "\r\x1b[K" if self._line else ""
        self._line = False
        self._write(f"{stamp} {event_text(event, fields)}\n", control=prefix)
        if event == "capture_start" and self.mode == "tty":
            self._status(f"{self.cluster} | capturing {', '.join(fields.get('targets', []))} "
                         f"| captures {self.captures}")

    def _status(self, line: str) -> None:
        """The one status line, rewritten in place and cut to the terminal's width (a wrapped
        line could not be rewritten by CR)."""
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        self._write(line if len(line) <= width else line[:width - 1] + "…", control="\r\x1b[K")
        self._line = True

    def _write(self, text: str, control: str = "") -> None:
        if control:  # the tool's own sequence: past the filter that neutralises host text
            write_control(self.out, control)
        self.out.write(text)
        self.out.flush()
