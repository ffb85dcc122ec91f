"""Reading a bundle archive (BUNDLE.tar.gz) someone else made, with the safety of a directory.

An archive is refused whole, with one line naming the member, when any member could not be a
file of a bundle: an absolute name, a `..` or empty component, a name outside the one top
directory, a symlink or hardlink, a device, FIFO or sparse file, a name seen twice (a later
member must not replace a file already read), more than MAX_MEMBERS members, a member over
read.MAX_FILE_BYTES, more than MAX_TOTAL_BYTES in all, or a decompression ratio past
MAX_RATIO once MAX_RATIO_AFTER bytes came out (a gzip bomb stops there, not at the disk's end).

The archive is read once, as a stream, and the regular files are written into a private
temporary directory (0700/0600, O_EXCL|O_NOFOLLOW, directories made here only), which the
ordinary bundle reader (untrusted/read.py) then reads like any bundle; the directory is gone
when the `with` ends.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from pdforensics.errors import BundleError
from pdforensics.untrusted.read import MAX_FILE_BYTES, UnsafePath, check_name, check_rel

SUFFIXES = (".tar.gz", ".tgz")
MAX_MEMBERS = 100_000
MAX_TOTAL_BYTES = 2 << 30
MAX_RATIO = 1000  # decompressed bytes per compressed byte ...
MAX_RATIO_AFTER = 256 << 20  # ... judged once this much came out
_CHUNK = 1 << 20
_FILE_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)


class UnsafeArchive(UnsafePath):
    """An archive refused: a member that could not be a bundle file, or past a cap."""


def is_archive(path: str | Path) -> bool:
    """A file named like a bundle archive (the reader checks the rest)."""
    p = Path(path)
    return p.name.endswith(SUFFIXES) and p.is_file()


class _Counted:
    """The compressed file, counting what the decompressor has read of it."""

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.read_bytes = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.read_bytes += len(data)
        return data


def _member_name(m: tarfile.TarInfo, where: str) -> str:
    name = m.name
    if name.startswith("./"):  # `tar -C dir -czf x.tgz .` writes these; the rest still checked
        name = name[2:]
    name = name.rstrip("/") if m.type == tarfile.DIRTYPE else name
    try:
        return check_rel(name, f"{where} member {m.name[:200]!r}")
    except UnsafePath as exc:
        raise UnsafeArchive(str(exc)) from None


def _kind(m: tarfile.TarInfo) -> str | None:
    """Why a member is refused by its type (None: a file or a directory)."""
    if m.issparse():
        return "a sparse file"
    if m.type in _FILE_TYPES or m.type == tarfile.DIRTYPE:
        return None
    return {tarfile.SYMTYPE: "a symlink", tarfile.LNKTYPE: "a hardlink",
            tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE: "a block device",
            tarfile.FIFOTYPE: "a FIFO", tarfile.CONTTYPE: "a contiguous file",
            tarfile.GNUTYPE_SPARSE: "a sparse file"}.get(m.type, f"member type {m.type!r}")


def safe_members(path: Path) -> Iterator[tuple[str, tarfile.TarInfo, tarfile.TarFile]]:
    """(checked name, member, the open stream) of every member, in archive order; raises
    UnsafeArchive at the first member a bundle reader must not accept."""
    where = path.name
    seen: set[str] = set()
    total = 0
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed in finally; the stream reads it lazily)
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    counted = _Counted(fh)
    try:
        with tarfile.open(fileobj=counted, mode="r|gz") as tar:  # type: ignore[call-overload]
            for n, m in enumerate(tar, 1):
                if n > MAX_MEMBERS:
                    raise UnsafeArchive(f"{where}: refused: more than {MAX_MEMBERS} members")
                name = _member_name(m, where)
                why = _kind(m)
                if why is not None:
                    raise UnsafeArchive(f"{where}: member {name[:200]!r} refused: {why} (a "
                                        "bundle holds regular files only)")
                if name in seen:
                    raise UnsafeArchive(f"{where}: member {name[:200]!r} refused: the name "
                                        "appears twice (a later copy would replace the first)")
                seen.add(name)
                if m.size > MAX_FILE_BYTES:
                    raise UnsafeArchive(f"{where}: member {name[:200]!r} refused: {m.size} bytes, "
                                        f"over the {MAX_FILE_BYTES}-byte cap of the bundle reader")
                total += m.size
                if total > MAX_TOTAL_BYTES:
                    raise UnsafeArchive(f"{where}: refused: more than {MAX_TOTAL_BYTES} bytes "
                                        "unpacked")
                yield name, m, tar
                if total > MAX_RATIO_AFTER and total > MAX_RATIO * max(1, counted.read_bytes):
                    raise UnsafeArchive(f"{where}: refused: {total} bytes from "
                                        f"{counted.read_bytes} compressed (a ratio over "
                                        f"{MAX_RATIO}: a decompression bomb)")
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise BundleError(f"{where}: not a readable .tar.gz: {str(exc)[:200]}") from None
    finally:
        fh.close()


def _read_member(tar: tarfile.TarFile, m: tarfile.TarInfo, out: BinaryIO | None) -> bytes:
    """The member's bytes (into ``out`` when given), never more than its header says."""
    src = tar.extractfile(m)
    if src is None:
        return b""
    got = bytearray() if out is None else None
    left = m.size
    while left > 0:
        chunk = src.read(min(_CHUNK, left))
        if not chunk:
            break
        left -= len(chunk)
        if out is not None:
            out.write(chunk)
        elif got is not None:
            got += chunk
    return bytes(got) if got is not None else b""


def _extract(path: Path, dest: Path) -> Path:
    """Every member under ``dest``; the one top directory, which must hold manifest.json or
    results.jsonl (a bundle)."""
    top: str | None = None
    for name, m, tar in safe_members(path):
        head = name.split("/", 1)[0]
        if top is None:
            top = check_name(head, f"{path.name} top directory")
        elif head != top:
            raise UnsafeArchive(f"{path.name}: member {name[:200]!r} refused: outside the "
                                f"bundle's directory {top!r}")
        target = dest / name
        if m.type == tarfile.DIRTYPE or name == top:
            if m.type != tarfile.DIRTYPE:
                raise UnsafeArchive(f"{path.name}: {name[:200]!r} refused: the top entry is a file")
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
            continue
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as out:
            _read_member(tar, m, out)
    if top is None:
        raise BundleError(f"{path.name}: an empty archive, not a bundle")
    bundle = dest / top
    if not any((bundle / f).is_file() for f in ("manifest.json", "results.jsonl")):
        raise BundleError(f"{path.name}: no manifest.json in {top}/: not a pdforensics bundle")
    return bundle


@contextmanager
def opened_bundle(path: str | Path) -> Iterator[Path]:
    """A bundle directory to read: ``path`` itself, or an archive's bundle unpacked (with
    every check above) into a private temporary directory removed afterwards."""
    p = Path(path)
    if not is_archive(p):
        yield p
        return
    tmp = Path(tempfile.mkdtemp(prefix=".pdforensics-archive."))
    try:
        try:
            bundle = _extract(p, tmp)
        except OSError as exc:  # a member that collides with one written before it
            raise UnsafeArchive(f"{p.name}: refused: {exc.strerror or exc} "
                                f"({Path(exc.filename or '').name})") from None
        yield bundle
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def archive_files(path: Path, cap_total: int = 512 << 20) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every regular file of any .tar.gz (triage's loose files), read in
    memory with the same member checks and at most ``cap_total`` bytes in all."""
    total = 0
    for name, m, tar in safe_members(path):
        if m.type == tarfile.DIRTYPE:
            continue
        total += m.size
        if total > cap_total:
            raise UnsafeArchive(f"{path.name}: refused: more than {cap_total} bytes to read")
        yield name, _read_member(tar, m, None)
