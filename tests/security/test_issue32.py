"""Issue 32, case by case: each attack of the round that broke, as a test that failed on the
main branch before the fix (the note /work/coord/notes/w32.md lists how each was checked).

The whole-capture versions (a real capture over real sshd, every case planted at once) are in
tests/e2e/test_hostile_host.py.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pdforensics.redact.redactor import MARKER, Redactor

R_KEY = b"issue-32"


def _cpu(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


# -- secrets on disk -----------------------------------------------------------------------------
SYNTAXES = {
    "python-toml-spaced": ('api_key = "SecI32Toml"', "SecI32Toml"),
    "yaml-next-line": ("server:\n  api_key:\n    SecI32YamlNext\n  port: 30000\n", "SecI32YamlNext"),
    "flag-continued-line": ("python -m sglang.launch_server --api-key \\\n    SecI32Cont \\\n    --port 1",
                            "SecI32Cont"),
    "tuple": ("settings = [('api_key', 'SecI32Tuple'), ('port', 1)]", "SecI32Tuple"),
    "json-key-with-space": ('{"db password": "SecI32DbPw", "port": 1}', "SecI32DbPw"),
    "xml-element": ("<config><password>SecI32Xml</password></config>", "SecI32Xml"),
    "mysql-p-glued": ("mysql -h db -u root -pSecI32Mysql kv", "SecI32Mysql"),
    "slack-xapp": ("app token xapp-1-A0SECI32-0123456789-abcdef0123456789abcdef", "abcdef0123456789abcdef"),
}


@pytest.mark.parametrize("case", sorted(SYNTAXES))
def test_a_secret_in_a_syntax_the_detectors_did_not_know(case: str) -> None:
    text, secret = SYNTAXES[case]
    out = Redactor(R_KEY).text(text.encode())
    assert secret.encode() not in out and MARKER.search(out), out


def test_a_value_redacted_from_a_command_line_is_scrubbed_from_the_log() -> None:
    r = Redactor(R_KEY)
    r.cmdline(b"python3\0-m\0sglang.launch_server\0--api-key\0SecI32ServerKey\0--port\x0030000\0")
    log = r.output("log_file", b"[2026-12-04 10:00:00] client sent key SecI32ServerKey (rejected)\n", "log_tail")
    assert b"SecI32ServerKey" not in log


def test_netrc_password_with_an_equals_sign() -> None:
    out = Redactor(R_KEY).text(b"machine db login bob password = SecI32Netrc\n")
    assert b"SecI32Netrc" not in out
    assert b"password = <redacted:" in out  # the `=` stays, the value is what is hidden


@pytest.mark.parametrize("token", ["dapiABCDEF0123456789ABCDEF0123456789", "key-0123456789abcdef0123456789abcdef"])
def test_a_four_letter_prefix_and_32_hex_from_a_log_line(token: str) -> None:
    out = Redactor(R_KEY).text(f"[2026-12-04 10:00:00 TP0] vendor client configured with {token}\n".encode())
    assert token.encode() not in out


# -- denial of service by text a host controls ------------------------------------------------
def test_redaction_of_a_padded_header_is_linear() -> None:
    r = Redactor(R_KEY)
    t = _cpu(lambda: r.text(b"x-api-key:" + b" " * 25_000 + b"\n"))
    assert t < 1.0, f"{t:.1f} s for 25 KB"


@pytest.mark.parametrize("parser", ["tracebacks", "faulthandler", "pystack"])
def test_a_40kb_frame_line_does_not_stall_the_stack_readers(parser: str) -> None:
    from pdforensics.parsers import faulthandler, pystack, tracebacks

    pad = " " * 40_000 + "x"
    texts = {
        "tracebacks": (tracebacks.parse_tracebacks,
                       f'Traceback (most recent call last):\n  File "a.py", line 1, in f{pad}\nValueError: x\n'),
        "faulthandler": (faulthandler.parse_faulthandler,
                         f'Thread 0x00007f (most recent call first):\n  File "a.py", line 1 in f{pad}\n'),
        "pystack": (pystack.parse_pystack, "Traceback for thread 1 [] (most recent call last):\n"
                    f'    (Python) File "a.py", line 1, in f{pad}\n'),
    }
    fn, text = texts[parser]
    t = _cpu(lambda: fn(text))
    assert t < 1.0, f"{parser}: {t:.1f} s for one 40 KB line"


def test_a_hostile_servers_padded_header_is_read_in_linear_time() -> None:
    from pdforensics.parsers.http import parse_http_response

    t = _cpu(lambda: parse_http_response(b"HTTP/1.1 200 OK\r\nX-Pad: a" + b" " * 30_000 + b"b \r\n\r\n{}"))
    assert t < 1.0, f"{t:.1f} s for a 30 KB header"


def test_log_signatures_on_long_near_matching_lines() -> None:
    from pdforensics.parsers.journal import SIGNATURES, scan_log_signatures

    lines = []
    for sig in SIGNATURES:  # every signature's own literals, chained, with padding between
        lines.append(" ".join(lit + " ," * 60 for lit in sig.literals)[:1500])
    # BATCH_STATS' six lazy `.*?` stages: every field but the last, 40 times (2.6 KB). Python's
    # re (before 1c0d589) took 37.6 s of CPU on this one line (0.77 s at 20 repeats), RE2 0.00 s
    lines.append("[2026-12-04 10:00:00 TP0] Prefill batch x"
                 + ", #new-seq: 1, #new-token: 1, #cached-token: 1, 1 #running-req: 1" * 40)
    t = _cpu(lambda: scan_log_signatures("\n".join(lines)))
    assert t < 2.0, f"{t:.1f} s for {len(lines)} lines of up to 2.6 KB"


# -- numbers and JSON from a host never crash ---------------------------------------------------
BIG = "9" * 5000


@pytest.mark.parametrize("text", [
    f"Process {BIG}: python3 -m sglang.launch_server\nPython v3.11.7 (/usr/bin/python3)\n\n"
    f'Thread 1 (idle): "MainThread"\n    f (a.py:{BIG})\n',
    f'Traceback (most recent call last):\n  File "a.py", line {BIG}, in f\nValueError: x\n',
    f"[2026-12-04 10:00:00 TP0] Pyspy dump for PID {BIG}:\nThread 1 (idle): \"MainThread\"\n    f (a.py:1)\n",
    f"goroutine 1 [chan receive, {BIG} minutes]:\nmain.f()\n\t/a.go:1 +0x1\n",
], ids=["process-N", "line-N", "pyspy-dump-for-pid-N", "go-N-minutes"])
def test_a_5000_digit_number_in_stack_text(text: str) -> None:
    from pdforensics.analysis.stacks_load import parse_stack_text
    from pdforensics.views.codec import to_jsonable

    dumps = parse_stack_text(text, "host.txt")
    json.dumps(to_jsonable(dumps))  # what parsed/ and --json write


def test_nvidia_smi_printing_0x_and_5000_hex_digits() -> None:
    from pdforensics.parsers.nvidia_smi import QUERY_GPU_FIELDS, parse_query_gpu
    from pdforensics.views.codec import to_jsonable

    values = ["0", "GPU-1", "H200", "0", "0", "1", "2", "30", "100.0", "1", "1", "0x" + "f" * 5000, "P0", "0"]
    gpus = parse_query_gpu(", ".join(values) + "\n", QUERY_GPU_FIELDS)
    json.dumps(to_jsonable(gpus))  # what the bundle writer does with parsed/


# -- the scanner gates an upload --------------------------------------------------------------
def test_router_request_ids_are_no_findings() -> None:
    from pdforensics.bundle.secrets_scan import scan_bytes

    log = b"".join(b'2026-12-04T10:00:%02dZ INFO smg: started processing request request_id="chatcmpl-'
                   + f"cWbHCIGf0gtAMLU2XJI2u{i:03d}".encode() + b'"\n' for i in range(50))
    assert scan_bytes(log, "raw/router/log.txt") == []
    # smg's own ids ("gnt-" + 24 random characters), quoted in analysis.json with the line's
    # colour codes JSON-escaped so that the field name no longer stands right before it
    quoted = (b'{"text": "\\u001b[3mrequest_id\\u001b[0m\\u001b[2m=\\u001b[0m\\"'
              b'gnt-iMmXlaF5OpNQFDxOiR0HZMln\\"}\n')
    assert scan_bytes(quoted, "analysis.json") == []
    assert scan_bytes(b'{"text": "token=\\"iMmXlaF5OpNQFDxOiR0HZMlnQ7\\""}\n', "analysis.json")


# -- smaller ------------------------------------------------------------------------------------
def test_markdown_neutralises_bidi_and_zero_width() -> None:
    from pdforensics.analysis.summary_md import code, escape

    for text in ("evil\u202etxt.exe", "zero\u200bwidth\u2066isolate\u2069", "bom\ufeff"):
        for out in (code(text), escape(text)):
            assert not any(c in out for c in "\u202e\u2066\u2069\ufeff") and "<U+" in out, out


def test_the_store_its_index_and_lock_are_owner_only_under_umask_022(tmp_path: Path) -> None:
    from pdforensics.store.index import open_index
    from pdforensics.store.lock import store_lock

    store = tmp_path / "store"
    old = os.umask(0o022)
    try:
        with store_lock(store), open_index(store) as index:
            index.conn.execute("SELECT 1")
    finally:
        os.umask(old)
    for p in (store, store / "bundles"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    for p in (store / "index.sqlite", store / ".lock"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def test_the_markdown_summary_file_is_owner_only_under_umask_022(tmp_path: Path) -> None:
    from pdforensics.analysis.summary_md import write_private_text

    md = tmp_path / "summary.md"
    md.write_text("an older summary, world-readable")
    md.chmod(0o644)
    old = os.umask(0o022)
    try:
        write_private_text(str(md), "# summary\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(md.stat().st_mode) == 0o600


def test_every_command_writes_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    """The CLI sets umask 077 for every command but `lab` (a report, a bundle, a temporary file)."""
    import subprocess
    import sys

    out = tmp_path / "r.txt"
    code = ("import os, sys; os.umask(0o022); from pdforensics.cli import main; "
            f"sys.argv = ['pdforensics', 'verify', {str(tmp_path)!r}]; "
            "import click\n"
            "try:\n main(standalone_mode=False)\nexcept BaseException: pass\n"
            f"open({str(out)!r}, 'w').write('x')")
    subprocess.run([sys.executable, "-c", code], check=False, capture_output=True)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_the_watch_exporter_binds_loopback_by_default() -> None:
    import inspect

    from pdforensics.cli.watch import watch
    from pdforensics.watch.exporter import WatchMetrics

    assert inspect.signature(WatchMetrics.serve).parameters["addr"].default == "127.0.0.1"
    addr = next(p for p in watch.params if p.name == "metrics_addr")
    assert addr.default == "127.0.0.1"


def test_deeply_nested_json_says_so() -> None:
    from pdforensics.triage.read import read_text

    deep = '{"version": "0.5.23", "server_args": {"x": ' + "[" * 200_000 + "]" * 200_000 + "}}"
    art = read_text("server_info.json", deep, len(deep))
    assert art.error is not None and "nested too deeply" in art.error, art.error
    cut = '{"version": "0.5.23", "server_args": {"tp_size": 8, "model_path": "/m'
    assert "cut short" in (read_text("server_info.json", cut, len(cut)).error or "")


def test_a_value_learned_in_one_snapshot_is_scrubbed_from_a_later_one(tmp_path: Path) -> None:
    """The store keeps (length, marker) of learned values, never the values; a later capture that
    does not read the command line again still hides the value in a log."""
    from pdforensics.store.learned import LEARNED, load_learned, save_learned

    first = Redactor(R_KEY)
    first.cmdline(b"python3\0-m\0sglang.launch_server\0--api-key\0SecI32Snapshot\0")
    key_id = str(first.describe()["key_id"])
    save_learned(tmp_path, key_id, first.learned_markers())
    assert b"SecI32Snapshot" not in (tmp_path / LEARNED).read_bytes()
    assert stat.S_IMODE((tmp_path / LEARNED).stat().st_mode) == 0o600
    later = Redactor(R_KEY)
    later.remember(load_learned(tmp_path, key_id))
    out = later.output("log_file", b"auth ok for SecI32Snapshot; token=SecI32Snapshot\n", "log_tail")
    assert b"SecI32Snapshot" not in out and out.count(first.marker(b"SecI32Snapshot")) == 2


def test_verify_secrets_reads_a_marker_joined_to_later_text_as_redacted() -> None:
    """A value redacted where it was collected, then joined to other text (argv with spaces and
    `pid 7: …` in a finding, markup in the report), is no hit; a marker glued to more of the
    same word, or a clear value, still is."""
    from pdforensics.bundle.secrets_scan import scan_bytes
    m = "<redacted:0123456789>"
    quiet = [f"--extra-header Authorization: Bearer {m} pid 21653: an SGLang process\n",
             "<code>--ssl-keyfile-password &lt;redacted:0123456789&gt;</code></li></ul>\n"]
    assert scan_bytes(quiet[0].encode(), "analysis.json") == []
    assert scan_bytes(quiet[1].encode(), "report.html") == []
    loud = [f"Authorization: Bearer {m}SecTestGlued31 pid 7\n", "Authorization: Bearer SecTestClear31 pid 7\n"]
    assert all(scan_bytes(t.encode(), "analysis.json") for t in loud)


def test_router_request_ids_between_colour_codes_are_no_findings() -> None:
    """smg colours its log fields even into a file: the id's name is read past the colour codes
    (a request id there was reported as a high-entropy secret); a random token named otherwise
    still is one."""
    from pdforensics.bundle.secrets_scan import scan_bytes

    line = ('\x1b[2m2026-12-04 20:23:24\x1b[0m \x1b[32m INFO\x1b[0m \x1b[1mhttp_request\x1b[0m\x1b[1m{\x1b[0m'
            '\x1b[3mmethod\x1b[0m\x1b[2m=\x1b[0mPOST \x1b[3mrequest_id\x1b[0m\x1b[2m=\x1b[0m"gnt-dKXuhrQjaQcNNN'
            '"\x1b[1m}\x1b[0m\n')
    log = "".join(line.replace("NNN", f"r5MV0GO7HQ{i:03d}") for i in range(20)).encode()
    assert scan_bytes(log, "raw/router-0/log_file.router.1.txt") == []
    parsed = b'{"example":"INFO http_request{method=POST request_id=\\"gnt-dKXuhrQjaQcr5MV0GO7HQSsp\\"}"}'
    assert scan_bytes(parsed, "parsed/router-0/router_log.router.1.json") == []
    other = log.replace(b"request_id", b"upstream_k")
    assert len(scan_bytes(other, "raw/router-0/log_file.router.1.txt")) == 20
