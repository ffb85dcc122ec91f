"""Derived JSON (parsed/, analysis) is redacted string by string and stays JSON; and text
redaction never cuts a value quoted with escaped quotes (`api_key=\"V\"`) at its backslash.
Found on a lab capture whose router re-exported a label `api_key="..."`: parsed/ became
unreadable and `analyze` failed."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pdforensics.bundle.ondisk import BundleWriter
from pdforensics.redact.redactor import Redactor

R = Redactor(key=b"test-key")
NAMES = ("api_key", "HF_TOKEN", "password", "auth_header", "secret")
FORMS = ('{name}="{v}"', "{name}={v}", "x{{{name}=\"{v}\",b=\"c\"}} 1", "'{name}': '{v}'",
         '"{name}": "{v}"', "--{name} {v}", "{name}: {v}")


@given(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(FORMS),
                          st.from_regex(r"[A-Za-z0-9]{12,24}", fullmatch=True)), min_size=1, max_size=6),
       st.booleans())
def test_redacted_json_text_is_still_json_without_the_values(items: list[tuple[str, str, str]],
                                                             compact: bool) -> None:
    obj: dict[str, object] = {f"k{i}": form.format(name=name, v=v) for i, (name, form, v) in enumerate(items)}
    obj["nested"] = [list(obj.values())]
    text = (json.dumps(obj, separators=(",", ":")) if compact else json.dumps(obj, indent=1)).encode()
    json.loads(R.text(text))  # text redaction of JSON text leaves JSON
    with tempfile.TemporaryDirectory() as d:
        w = BundleWriter(Path(d), "c", R, 0.0)
        w.write_json("parsed/h/x.json", obj, compact=compact)
        out = (w.tmp / "parsed/h/x.json").read_bytes()
    json.loads(out)
    for _name, _form, v in items:
        assert v.encode() not in out


def test_the_router_label_that_broke_parsed() -> None:
    line = 'sglang_lab_planted_info{api_key="<redacted:b05ea3baa0>",hf="x"} 1'
    text = json.dumps({"line": line}).encode()
    assert json.loads(R.text(text)) == {"line": line}  # a marker stays as it is
