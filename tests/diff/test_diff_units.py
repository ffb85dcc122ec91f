"""`systemctl cat` -> unit file and drop-ins as directives."""

from __future__ import annotations

from pathlib import Path

from pdforensics.diff.units import parse_unit_cat

DATA = Path(__file__).resolve().parent.parent / "data"

CAT = """# /etc/systemd/system/sglang-decode.service
[Unit]
Description=SGLang decode
After=network-online.target

[Service]
# the server itself
ExecStart=/opt/venv/bin/python -m sglang.launch_server \\
    --model-path /models/DeepSeek-V3 \\
    --disaggregation-mode decode
Restart=always

# /etc/systemd/system/sglang-decode.service.d/override.conf
[Service]
Environment=SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600
"""


def test_unit_and_dropin_split_at_headers() -> None:
    files = parse_unit_cat(CAT)
    assert [f.path for f in files] == ["/etc/systemd/system/sglang-decode.service",
                                       "/etc/systemd/system/sglang-decode.service.d/override.conf"]
    assert not files[0].is_dropin and files[1].is_dropin
    assert files[1].directives == ("Service.Environment=SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600",)


def test_continuation_lines_are_joined_and_comments_dropped() -> None:
    unit = parse_unit_cat(CAT)[0]
    exec_start = [d for d in unit.directives if d.startswith("Service.ExecStart=")]
    assert exec_start == ["Service.ExecStart=/opt/venv/bin/python -m sglang.launch_server "
                          "--model-path /models/DeepSeek-V3 --disaggregation-mode decode"]
    assert not any("the server itself" in d for d in unit.directives)


def test_reformatting_compares_equal() -> None:
    reformatted = CAT.replace("Restart=always", "Restart = always").replace("\n\n[Service]", "\n[Service]")
    assert parse_unit_cat(reformatted) == parse_unit_cat(CAT)


def test_empty_input() -> None:
    assert parse_unit_cat("") == ()


def test_real_sample() -> None:
    files = parse_unit_cat((DATA / "systemd_cat_decode.txt").read_text())
    assert files and files[0].path.endswith(".service")
    assert any(d.startswith("Service.ExecStart=") for d in files[0].directives)
