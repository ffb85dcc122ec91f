"""A bundle's .tar.gz is untrusted input too: analyze, report, verify, diff and triage read it
with the safety of a directory. Every directory trick, archived, is refused; so are the
archive's own attacks (absolute names, `..`, symlink and hardlink members, devices and FIFOs,
sparse files, duplicate names, members outside the top directory, too many members, an
oversize member, a gzip bomb, a file that is not gzip). Nothing is written outside the
reader's private temporary directory, which is gone afterwards, and nothing from outside the
archive reaches the output."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pdforensics.bundle.archive import write_archive
from pdforensics.cli import main
from pdforensics.untrusted import archive as reader
from pdforensics.untrusted.read import MAX_FILE_BYTES
from tests.security.crafted import MARKER, TARGET, TRICKS, crafted, make_bundle

COMMANDS = ("analyze", "report", "verify", "triage")
TMP_PREFIX = ".pdforensics-archive."


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The reader's temporary directories go here, so the test can see they are removed."""
    t = tmp_path / "readertmp"
    t.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(t))
    yield t
    assert not [p for p in t.iterdir() if p.name.startswith(TMP_PREFIX)], "temporary bundle left"


def _refused(res: Result, *names: str) -> None:
    out = res.output
    assert res.exit_code == 1, out
    assert "Traceback" not in out and MARKER not in out
    lines = [ln for ln in out.splitlines() if "refused" in ln or "not a readable" in ln]
    assert lines, out
    if names:
        assert any(n in ln for ln in lines for n in names), lines


def _tar_gz(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """A .tar.gz written header by header: any name, any type, any declared size (the data
    may be shorter than the header says, as an attacker's may)."""
    raw = io.BytesIO()
    for info, data in members:
        raw.write(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        if data:
            raw.write(data + b"\0" * (-len(data) % 512))
    raw.write(b"\0" * 1024)
    return gzip.compress(raw.getvalue(), mtime=0)


def _info(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE, **kw: object) -> tarfile.TarInfo:
    t = tarfile.TarInfo(name)
    t.size, t.type, t.mode = size, kind, 0o600
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def _bundle_members(bundle: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    """The members of a sound archive of ``bundle`` (directories and files)."""
    out = [(_info(bundle.name, kind=tarfile.DIRTYPE), b"")]
    for p in sorted(bundle.rglob("*")):
        rel = f"{bundle.name}/{p.relative_to(bundle).as_posix()}"
        if p.is_dir():
            out.append((_info(rel, kind=tarfile.DIRTYPE), b""))
        else:
            data = p.read_bytes()
            out.append((_info(rel, len(data)), data))
    return out


def _attack(tmp: Path, bundle: Path, name: str, extra: list[tuple[tarfile.TarInfo, bytes]],
            drop: str | None = None) -> Path:
    """An archive of ``bundle`` with the ``extra`` members after its own."""
    members = [m for m in _bundle_members(bundle) if drop is None or m[0].name != drop]
    path = tmp / f"{name}.tar.gz"
    path.write_bytes(_tar_gz(members + extra))
    return path


B = "crafted-"  # the crafted bundle's name starts so; its full name is read at run time


def test_clean_archive_reads_like_its_directory(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "bundles")
    packed = write_archive(bundle)
    with tarfile.open(packed) as tar:
        assert all(m.isdir() or m.isfile() for m in tar.getmembers())
        assert all(m.name.split("/")[0] == bundle.name for m in tar.getmembers())
    for command in ("analyze", "verify"):
        a, b = _run(command, str(bundle)), _run(command, str(packed))
        assert a.exit_code == b.exit_code == 0, (a.output, b.output)
        assert a.output.replace(str(bundle), "X") == b.output.replace(str(packed), "X")
    r = _run("report", str(packed))
    assert r.exit_code == 0, r.output
    page = Path(r.output.strip())
    assert page == packed.with_name(f"{bundle.name}.report.html") and page.is_file()
    assert f'href="{bundle.name}/raw/h1/' in page.read_text()  # links to the unpacked bundle
    assert _run("diff", str(packed), str(bundle)).exit_code == 0
    t = _run("triage", str(packed))  # this bundle holds nothing triage reads (no log lines)
    assert t.exit_code == 1 and "holds no file triage reads" in t.output, t.output


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trick", sorted(set(TRICKS) - {"oversize", "char-device"}))
@pytest.mark.parametrize("command", COMMANDS)
def test_every_directory_trick_archived_is_refused(tmp_path: Path, trick: str, command: str) -> None:
    bundle, _outside = crafted(tmp_path, trick)
    packed = tmp_path / f"{bundle.name}.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(bundle, arcname=bundle.name)  # links and FIFOs go in as they are
    res = _run(command, str(packed))
    if command == "triage" and trick in ("absolute-outside", "absolute-proc-environ", "dotdot"):
        # a path trick in the manifest: triage reads the raw files, never a manifest path
        assert res.exit_code in (0, 1, 3) and MARKER not in res.output, res.output
        assert "Traceback" not in res.output
        return
    _refused(res, "raw/h1", "cmdline.pid", "results[", TARGET.rsplit("/", 1)[-1])


def _planted() -> dict[str, object]:
    top = "BUNDLE"
    return {
        "absolute-name": [(_info("/tmp/pdfx-escape-abs"), b"")],
        "dotdot-name": [(_info(f"{top}/../../pdfx-escape-dotdot", 5), b"owned")],
        "outside-top": [(_info("other-dir/x.txt", 5), b"hello")],
        "symlink-member": [(_info(f"{top}/raw/h1/link.txt", kind=tarfile.SYMTYPE,
                                  linkname="/proc/self/environ"), b"")],
        "hardlink-member": [(_info(f"{top}/raw/h1/hard.txt", kind=tarfile.LNKTYPE,
                                   linkname="/etc/passwd"), b"")],
        "char-device": [(_info(f"{top}/raw/h1/zero", kind=tarfile.CHRTYPE, devmajor=1,
                               devminor=5), b"")],
        "block-device": [(_info(f"{top}/raw/h1/disk", kind=tarfile.BLKTYPE, devmajor=8,
                                devminor=0), b"")],
        "fifo": [(_info(f"{top}/raw/h1/pipe", kind=tarfile.FIFOTYPE), b"")],
        "sparse": [(_info(f"{top}/raw/h1/sparse", 4, kind=tarfile.GNUTYPE_SPARSE), b"abcd")],
        "duplicate-manifest": [(_info(f"{top}/manifest.json", 2), b"{}")],
        "oversize-member": [(_info(f"{top}/raw/h1/big.txt", MAX_FILE_BYTES + 1), b"x" * 512)],
        "pax-absolute-path": [(_info(f"{top}/raw/h1/ok.txt", 2, pax_headers={"path": "/tmp/pdfx-pax"}),
                               b"ok")],
    }


@pytest.mark.timeout(60)
@pytest.mark.parametrize("attack", sorted(_planted()))
@pytest.mark.parametrize("command", COMMANDS + ("diff",))
def test_planted_member_attacks_are_refused(tmp_path: Path, attack: str, command: str) -> None:
    src = make_bundle(tmp_path / "src")
    extra = [(_renamed(i, src.name), d) for i, d in _planted()[attack]]  # type: ignore[attr-defined]
    path = _attack(tmp_path, src, attack, extra)
    if command == "diff":
        res = _run("diff", str(src), str(path))
    else:
        res = _run(command, str(path))
    if command == "triage" and attack == "outside-top":  # loose files may sit in several folders
        assert res.exit_code in (0, 1, 3) and "Traceback" not in res.output, res.output
        return
    _refused(res, path.name)
    assert attack == "outside-top" or "outside the bundle" not in res.output  # the attack itself
    for escaped in ("/tmp/pdfx-escape-abs", "/tmp/pdfx-pax", str(tmp_path.parent / "pdfx-escape-dotdot")):
        assert not os.path.exists(escaped), escaped


def _renamed(info: tarfile.TarInfo, top: str) -> tarfile.TarInfo:
    info.name = info.name.replace("BUNDLE", top)
    return info


def test_too_many_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_MEMBERS", 40)
    src = make_bundle(tmp_path / "src")
    extra = [(_info(f"{src.name}/raw/h1/n{i}.txt", 1), b"x") for i in range(60)]
    _refused(_run("analyze", str(_attack(tmp_path, src, "many", extra))), "more than 40 members")


def test_gzip_bomb_stops_at_the_ratio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Megabytes of zeros from a few kilobytes: refused once MAX_RATIO_AFTER bytes came out,
    the caps lowered here so the bomb is small (the real ones: 256 MiB at a ratio of 1000)."""
    monkeypatch.setattr(reader, "MAX_RATIO_AFTER", 4 << 20)
    monkeypatch.setattr(reader, "MAX_RATIO", 100)
    src = make_bundle(tmp_path / "src")
    extra = [(_info(f"{src.name}/raw/h1/zeros{i}.txt", 2 << 20), b"\0" * (2 << 20)) for i in range(6)]
    path = _attack(tmp_path, src, "bomb", extra)
    assert path.stat().st_size < 100_000
    _refused(_run("verify", str(path)), "decompression bomb")
    _refused(_run("triage", str(path)), "decompression bomb")


def test_total_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_TOTAL_BYTES", 1 << 20)
    src = make_bundle(tmp_path / "src")
    extra = [(_info(f"{src.name}/raw/h1/big{i}.txt", 400_000), os.urandom(400_000)) for i in range(3)]
    _refused(_run("analyze", str(_attack(tmp_path, src, "total", extra))), "bytes unpacked")


@pytest.mark.parametrize("body", [b"not gzip at all", gzip.compress(b"gzip, not a tar" * 10, mtime=0),
                                  b"\x1f\x8b\x08\x00truncated"],
                         ids=["not-gzip", "gzip-not-tar", "truncated-gzip"])
def test_not_a_tar_gz_is_one_line(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "broken.tar.gz"
    path.write_bytes(body)
    for command in ("analyze", "verify", "report"):
        res = _run(command, str(path))
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1, res.output


def test_an_archive_without_a_bundle_is_not_analyzed(tmp_path: Path) -> None:
    path = tmp_path / "logs.tar.gz"
    path.write_bytes(_tar_gz([(_info("logs", kind=tarfile.DIRTYPE), b""),
                              (_info("logs/decode.log", 5), b"hello")]))
    res = _run("analyze", str(path))
    assert res.exit_code == 1 and "not a pdforensics bundle" in res.output, res.output
