"""Host text on the operator's terminal: controls shown visibly, never interpreted."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.terminal import SafeStream, field, neutralise, write_control
from tests.security.ptyrun import run_on_pty, unsafe_bytes

HOSTILE = ("\x1b[2J\x1b[H"  # clear the screen
           "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the clipboard
           "\x1b]8;;http://127.0.0.1/evil\x1b\\click\x1b]8;;\x1b\\"  # OSC 8 link
           "\x1b]0;pwned title\x07"  # window title
           "all good\rERROR hidden\b\b\x7f"  # CR overwrite, backspace, DEL
           "\x9b31m\x85\u202etxt.exe\u2066")  # C1 CSI, C1 NEL, bidi override, isolate
UNSAFE = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])) | set(
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff")


def test_every_control_is_shown_visibly() -> None:
    out = neutralise(HOSTILE)
    assert not set(out) & UNSAFE, out
    for shown in ("\\x1b[2J", "\\x1b]52;c;", "\\x07", "\\x1b]8;;", "\\r", "\\x08", "\\u007f", "\\u009b",
                  "\\u0085", "\\u202e", "\\u2066"):
        assert shown in out, shown


def test_a_field_is_one_line() -> None:
    forged = "decode-0 ok\nverdict: HEALTHY\r\n"
    assert field(forged) == "decode-0 ok\\nverdict: HEALTHY\\r\\n"
    assert neutralise("a\nb\tc") == "a\nb\tc"  # the tool's own lines and tabs stay


@settings(max_examples=2000)
@given(st.text())
def test_no_control_survives(text: str) -> None:
    assert not set(neutralise(text)) & UNSAFE
    assert not set(field(text)) & (UNSAFE | {"\n", "\t"})


@settings(max_examples=2000)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(), kids, max_size=4),
                    max_leaves=12), st.booleans())
def test_json_output_stays_the_same_json(obj: object, ascii_only: bool) -> None:
    text = json.dumps(obj, indent=1, ensure_ascii=ascii_only)
    assert json.loads(neutralise(text)) == json.loads(text)


def test_safe_stream_filters_writes_and_passes_the_tools_own_controls() -> None:
    raw = io.StringIO()
    out = SafeStream(raw)
    out.write("host says " + HOSTILE + "\n")
    write_control(out, "\r\x1b[K")  # the watch status line's own rewrite
    out.write("status\n")
    text = raw.getvalue()
    assert text.count("\x1b") == 1 and text.endswith("\r\x1b[Kstatus\n"), text


def _hostile_pyspy(path: Path) -> Path:
    path.write_text(
        "Process 4242: python3 -m sglang.launch_server --model-path /models/\x1b]52;c;ZXZpbA==\x07llama\n"
        "Python v3.11.9 (/usr/bin/python3.11)\n\n"
        "Thread 4243 (idle): \"MainThread\x1b[2J\x1b]0;owned\x07\"\n"
        "    event_loop_overlap (sglang/srt/managers/scheduler.py:1000)\n"
        "    wait\u202ecod (\x1b]8;;http://127.0.0.1/x\x1b\\threading.py\x1b]8;;\x1b\\:320)\n")
    return path


def test_stacks_output_on_a_pseudo_terminal(tmp_path: Path) -> None:
    """`stacks` prints thread names, functions and files that a host wrote: on a real pty,
    the terminal receives them with every control shown, none interpreted."""
    dump = _hostile_pyspy(tmp_path / "pyspy.txt")
    rc, received = run_on_pty([sys.executable, "-m", "pdforensics.cli", "stacks", str(dump)])
    assert rc == 0, received
    assert unsafe_bytes(received) == [], received
    assert b"\\x1b" in received, received  # shown, not dropped


def test_json_on_a_pseudo_terminal_stays_valid(tmp_path: Path) -> None:
    dump = _hostile_pyspy(tmp_path / "pyspy.txt")
    rc, received = run_on_pty([sys.executable, "-m", "pdforensics.cli", "stacks", "--json", str(dump)])
    assert rc == 0, received
    assert unsafe_bytes(received) == [], received
    doc = json.loads(received.replace(b"\r\n", b"\n"))
    name = doc["buckets"][0]["members"][0]["thread_name"]
    assert name == "MainThread\x1b[2J\x1b]0;owned\x07"  # the value itself is intact in the JSON
