"""Version parsers on pip/uname/nvidia-smi samples (tests/data/pip_COMMANDS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.versions import (
    parse_nvidia_smi_version,
    parse_os_release,
    parse_pip_freeze,
    parse_uname,
)

DATA = Path(__file__).resolve().parent.parent / "data"


def test_pip_freeze_sglang_host() -> None:
    p = parse_pip_freeze((DATA / "pip_freeze_sglang_host.txt").read_text())
    assert p["torch"] == "2.8.0+cu128" and p["Triton"] == "3.4.0" and p["triton"] == "3.4.0"
    assert p["sgl_kernel"] == "0.3.5" and p.get("flashinfer-python") == "0.2.14.post1"
    assert p["sglang"].startswith("-e git+https://github.com/sgl-project/sglang.git@5e1a9c3b")
    assert p["sglang-router"].startswith("@ file:///tmp/wheels/sglang_router-0.1.9")
    assert p["zope.interface"] == "7.2"
    assert "numpy" not in p and len(p) == 11
    assert p.bad_lines == ((14, "this line is garbage"),)
    with pytest.raises(TypeError):
        p["x"] = "1"  # type: ignore[index]


def test_pip_freeze_real_venv() -> None:
    p = parse_pip_freeze((DATA / "pip_freeze_dev_venv.txt").read_text())
    assert p.bad_lines == () and len(p) == 36
    assert p["click"] == "8.5.1" and p["main"] == "-e /work/main"


def test_pip_list_columns_and_errors() -> None:
    p = parse_pip_freeze("Package    Version\n---------- -------\nclick      8.1.7\nrich 13.0\n")
    assert dict(p) == {"click": "8.1.7", "rich": "13.0"}
    assert len(parse_pip_freeze("")) == 0
    with pytest.raises(ParseError, match="not pip freeze output"):
        parse_pip_freeze("bash: pip: command not found\n")


def test_uname() -> None:
    real = parse_uname((DATA / "pip_uname_a.txt").read_text())
    assert real is not None and real.kernel_name == "Linux" and real.machine == "x86_64"
    assert real.kernel_release == "6.18.44-fc-v1045" and real.operating_system == "GNU/Linux"
    u = parse_uname("Linux gpu-a 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023"
                    " x86_64 x86_64 x86_64 GNU/Linux")
    assert u is not None and u.nodename == "gpu-a"
    assert u.kernel_version == "#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023"
    only_r = parse_uname("6.8.0-1015-nvidia\n")
    assert only_r is not None and only_r.kernel_release == "6.8.0-1015-nvidia"
    assert parse_uname("") is None


def test_nvidia_smi_versions() -> None:
    h = parse_nvidia_smi_version((DATA / "pip_nvidia_smi_header.txt").read_text())
    assert (h.driver, h.cuda, h.smi) == ("570.124.06", "12.8", "570.124.06")
    v = parse_nvidia_smi_version((DATA / "pip_nvidia_smi_version.txt").read_text())
    assert v.nvml == "570.124" and v.driver == "570.124.06" and v.cuda == "12.8"
    assert parse_nvidia_smi_version("").driver is None
    with pytest.raises(ParseError, match="no driver or CUDA version"):
        parse_nvidia_smi_version("NVIDIA-SMI has failed because it couldn't communicate\n")


def test_os_release() -> None:
    assert dict(parse_os_release('NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\n'
                                 "ID=ubuntu\n# c\nbad line\n")) == {
        "NAME": "Ubuntu", "VERSION": "22.04.4 LTS (Jammy Jellyfish)", "ID": "ubuntu"}
