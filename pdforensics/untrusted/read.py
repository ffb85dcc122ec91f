"""The one way to read a file of a bundle: a bundle is untrusted input.

A bundle travels to tickets and to other people's machines, so every path it names is
checked before it is opened: relative, no `..`, no empty or hidden-root components, and
opened component by component with O_NOFOLLOW under the bundle's own directory, so a
symlink anywhere on the way (a file or a directory) is refused instead of followed. What is
opened must be a regular file (never a FIFO, a socket or a device: a FIFO is opened
non-blocking, so it cannot hang the reader) and no larger than a cap. Every refusal is a
BundleError whose one line names the entry that asked for the file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pdforensics.errors import BundleError

MAX_FILE_BYTES = 256 << 20  # a raw result: logs are cut at 8 MiB on the host, metrics at less
MAX_JSON_BYTES = 64 << 20  # manifest.json, results.jsonl, parsed/*.json, analysis.json
MAX_PATH_CHARS = 1024
_CHUNK = 1 << 20


class UnsafePath(BundleError):
    """A path from a bundle that points outside it or at something that is not a file."""


def check_rel(rel: object, entry: str) -> str:
    """`rel` as a safe bundle-relative POSIX path, else UnsafePath naming `entry`."""
    if not isinstance(rel, str) or not rel:
        raise UnsafePath(f"{entry}: path {rel!r} refused: not a non-empty string")
    shown = repr(rel[:200])
    if len(rel) > MAX_PATH_CHARS:
        raise UnsafePath(f"{entry}: path {shown} refused: longer than {MAX_PATH_CHARS} characters")
    if "\0" in rel or "\\" in rel:
        raise UnsafePath(f"{entry}: path {shown} refused: NUL or backslash in it")
    if rel.startswith("/"):
        raise UnsafePath(f"{entry}: path {shown} refused: absolute (must stay inside the bundle)")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"{entry}: path {shown} refused: empty, '.' or '..' component "
                         "(must stay inside the bundle)")
    return rel


def check_name(name: object, entry: str) -> str:
    """A single path component (a host name used as a directory), else UnsafePath."""
    rel = check_rel(name, entry)
    if "/" in rel:
        raise UnsafePath(f"{entry}: name {rel[:200]!r} refused: contains '/'")
    return rel


def _open_dir(root: Path) -> int:
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise BundleError(f"{root}: cannot open bundle directory: {exc.strerror or exc}") from None


def _refuse_kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return what
    return "not a regular file"


def open_inside(root: Path, rel: str, entry: str) -> int:
    """An fd of the regular file `rel` under `root`, opened without following any symlink.
    FileNotFoundError when it is absent; UnsafePath for anything refused."""
    rel = check_rel(rel, entry)
    parts = rel.split("/")
    fd = _open_dir(root)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=fd)
            except OSError as exc:
                _explain(fd, part, exc, entry, "/".join(parts[:i + 1]))
                raise
            os.close(fd)
            fd = nfd
        try:
            ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                          | os.O_CLOEXEC, dir_fd=fd)
        except OSError as exc:
            _explain(fd, parts[-1], exc, entry, rel)
            raise
    finally:
        os.close(fd)
    why = _refuse_kind(os.fstat(ffd).st_mode)
    if why is not None:
        os.close(ffd)
        raise UnsafePath(f"{entry}: {rel[:200]!r} refused: {why}, not a regular file")
    return ffd


def _explain(dir_fd: int, name: str, exc: OSError, entry: str, shown: str) -> None:
    """Turn an open() failure caused by a symlink or a non-directory into UnsafePath."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return  # absent: the caller's OSError stands
    why = _refuse_kind(mode)
    if why is not None and why != "a directory":
        raise UnsafePath(f"{entry}: {shown[:200]!r} refused: {why} "
                         "(a bundle's files are read without following links)") from None


def read_inside(root: Path, rel: str, entry: str, cap: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of bundle file `rel`, at most `cap` of them (a larger file is refused)."""
    fd = open_inside(root, rel, entry)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > cap:
            raise UnsafePath(f"{entry}: {rel[:200]!r} refused: {size} bytes, over the "
                             f"{cap}-byte cap of the bundle reader")
        data = f.read(cap + 1)
    if len(data) > cap:
        raise UnsafePath(f"{entry}: {rel[:200]!r} refused: grew past the {cap}-byte cap while read")
    return data


def read_optional(root: Path, rel: str, entry: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
    """read_inside, or None when the file is absent (refusals still raise)."""
    try:
        return read_inside(root, rel, entry, cap)
    except UnsafePath:
        raise
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BundleError(f"{entry}: cannot read {rel[:200]!r}: {exc.strerror or exc}") from None


def sha256_inside(root: Path, rel: str, entry: str, cap: int = MAX_FILE_BYTES) -> str:
    """sha256 of bundle file `rel`, read through the same checks and cap."""
    import hashlib

    fd = open_inside(root, rel, entry)
    h, total = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(_CHUNK):
            total += len(chunk)
            if total > cap:
                raise UnsafePath(f"{entry}: {rel[:200]!r} refused: over the {cap}-byte cap")
            h.update(chunk)
    return h.hexdigest()


def parse_json(data: bytes, entry: str) -> Any:
    """JSON from bundle bytes: strict UTF-8, finite numbers; nesting past the interpreter's
    recursion limit is caught (RecursionError) like any other bad JSON; else BundleError."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{entry}: not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise BundleError(f"{entry}: not valid JSON: {str(exc)[:200]}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json_inside(root: Path, rel: str, entry: str) -> Any:
    """A bundle JSON file, parsed; None when absent. Refusals and bad JSON raise BundleError."""
    data = read_optional(root, rel, entry, MAX_JSON_BYTES)
    return None if data is None else parse_json(data, entry)


def walk_inside(root: Path) -> Iterator[tuple[str, int]]:
    """(relative path, lstat mode) of every entry under `root`, never entering a symlink."""
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            p = Path(dirpath) / name
            try:
                mode = os.lstat(p).st_mode
            except OSError:
                continue
            yield p.relative_to(root).as_posix(), mode


def tree_problems(root: Path, cap: int = MAX_FILE_BYTES) -> list[str]:
    """One line per entry of the tree a reader would refuse: links, special files, oversize."""
    problems = []
    for rel, mode in walk_inside(root):
        if stat.S_ISDIR(mode):
            continue
        why = _refuse_kind(mode)
        if why is not None:
            problems.append(f"{rel}: {why}, refused (a bundle holds regular files only)")
            continue
        size = os.lstat(root / rel).st_size
        if size > cap:
            problems.append(f"{rel}: {size} bytes, refused: over the {cap}-byte cap of the "
                            "bundle reader")
    return problems
