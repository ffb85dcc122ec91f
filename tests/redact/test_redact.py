"""Secret scrubbing: environ values by name, credential-looking text everywhere."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.redact.redactor import Redactor

TOKEN = b"hf_abcdefghijklmnopqrstuvwxyz0123"


def test_environ_redacts_secret_names_and_keeps_equal_values_comparable() -> None:
    r = Redactor(b"k")
    out = r.environ(b"HF_TOKEN=" + TOKEN + b"\0PATH=/usr/bin\0MY_API_KEY=abc12345\0SGLANG_X=1\0")
    assert TOKEN not in out and b"abc12345" not in out
    assert b"PATH=/usr/bin" in out and b"SGLANG_X=1" in out
    assert out.count(b"<redacted:") == 2
    again = Redactor(b"k").environ(b"HF_TOKEN=" + TOKEN)
    assert r.marker(TOKEN) in again  # same key, same value -> same marker
    assert Redactor(b"other").marker(TOKEN) != r.marker(TOKEN)


def test_learned_values_are_scrubbed_from_any_output() -> None:
    r = Redactor(b"k")
    r.environ(b"DB_PASSWORD=swordfish-42\0")
    assert b"swordfish-42" not in r.text(b"connecting with swordfish-42 now")


def test_flags_headers_json_and_token_shapes() -> None:
    r = Redactor(b"k")
    text = (b"python -m sglang.launch_server --api-key s3cr3tvalue --port 1\n"
            b"Authorization: Bearer abcdef123456\n{\"admin_api_key\": \"zzzz9999\"}\n"
            b"ghp_" + b"a" * 36 + b" sk-" + b"b" * 30 + b" AKIAABCDEFGHIJKLMNOP\n")
    out = r.text(text)
    for secret in (b"s3cr3tvalue", b"abcdef123456", b"zzzz9999", b"ghp_aaaa", b"sk-bbbb",
                   b"AKIAABCDEFGHIJKLMNOP"):
        assert secret not in out, secret
    assert b"--port 1" in out


def test_redaction_is_idempotent() -> None:
    r = Redactor(b"k")
    once = r.text(b"--api-key s3cr3tvalue " + TOKEN)
    assert r.text(once) == once


@settings(max_examples=2000, deadline=None)
@given(st.binary())
def test_never_crashes_and_planted_token_never_survives(data: bytes) -> None:
    r = Redactor(b"k")
    out = r.text(data + b" " + TOKEN + b" ")
    assert TOKEN not in out


def test_a_remembered_text_is_scrubbed_again_once_a_new_secret_is_learned() -> None:
    """text() remembers short strings; a value learned later (from a host's environ read after
    the string was first seen) must still be replaced in it."""
    r = Redactor(key=b"k" * 32)
    line = b"frame at /srv/app/q7Zr9kLmP2vX.py"
    assert r.text(line) == line  # nothing secret known yet: remembered as is
    assert r.text(line) == line
    r.learn([b"q7Zr9kLmP2vX"])
    again = r.text(line)
    assert b"q7Zr9kLmP2vX" not in again and r.marker(b"q7Zr9kLmP2vX") in again
