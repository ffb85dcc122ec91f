"""Cluster file and host-argument parsing."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest

from pdforensics.config.cluster import hosts_from_args, load_cluster_file
from pdforensics.errors import ConfigError

GOOD = """
[cluster]
name = "dsv4-pd"
[[hosts]]
name = "decode-0"
address = "127.0.0.3"
port = 2222
user = "root"
identity = "keys/id_ed25519"
known_hosts = "keys/known_hosts"
sudo = true
[[hosts.services]]
role = "decode"
port = 30001
unit = "sglang-decode.service"
log_file = "/var/log/sglang/decode.log"
[[hosts]]
name = "router"
address = "local"
[[hosts.services]]
role = "router"
port = 8000
metrics_port = 29000
"""


def ed25519_line(host: str) -> str:
    """A well-formed known_hosts line (the key's bytes are arbitrary)."""
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + bytes(range(32))
    return f"{host} ssh-ed25519 {base64.b64encode(blob).decode()}\n"


def key_files(base: Path) -> None:
    (base / "keys").mkdir(exist_ok=True)
    (base / "keys" / "id_ed25519").write_text("not parsed before connecting\n")
    (base / "keys" / "known_hosts").write_text(ed25519_line("[127.0.0.3]:2222"))


def test_cluster_file(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text(GOOD)
    key_files(tmp_path)
    c = load_cluster_file(f)
    assert c.name == "dsv4-pd" and [h.name for h in c.hosts] == ["decode-0", "router"]
    d = c.hosts[0]
    assert d.port == 2222 and d.user == "root" and d.sudo
    assert d.identity == str(tmp_path / "keys/id_ed25519")
    assert d.services[0].unit == "sglang-decode.service" and d.services[0].port == 30001
    assert c.hosts[1].is_local and c.hosts[1].services[0].metrics_port == 29000


@pytest.mark.parametrize("text,needle", [
    ("[[hosts]]\nname='a'\n", "'address' is required"),
    ("[[hosts]]\naddress='a'\nport=99999\n", "port number"),
    ("[[hosts]]\naddress='a'\n[[hosts.services]]\nrole='x'\nport=1\n", "role must be one of"),
    ("[[hosts]]\naddress='a'\nbogus=1\n", "unknown key 'bogus'"),
    ("[[hosts]]\naddress='a'\nname='../x'\n", "may only hold"),
    ("[[hosts]]\naddress='a'\n[[hosts]]\naddress='a'\n", "duplicate host names"),
    ("[cluster\n", "invalid TOML"),
    ("", "at least one [[hosts]]"),
])
def test_cluster_file_errors_are_one_line(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_cluster_file(f)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_cluster_file("/nonexistent/cluster.toml")


def test_host_args() -> None:
    c = hosts_from_args(["root@10.0.0.1:2222", "gpu-7", "ops@[::1]:22"], "id", "kh")
    a, b, v6 = c.hosts
    assert (a.user, a.address, a.port) == ("root", "10.0.0.1", 2222)
    assert (b.user, b.address, b.port) == (None, "gpu-7", None)
    assert (v6.user, v6.address, v6.port) == ("ops", "::1", 22)
    assert a.identity == "id" and not a.services
    with pytest.raises(ConfigError):
        hosts_from_args(["h:notaport"], None, None)
