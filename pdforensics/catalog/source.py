"""Read sglang's source files from a wheel, a source tree or site-packages, without importing."""

from __future__ import annotations

import ast
import hashlib
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pdforensics import linear
from pdforensics.errors import PdforensicsError

_NAME_SGLANG = linear.compile(r'^name\s*=\s*"sglang"', linear.M)
_VERSION_LINE = linear.compile(r'^version\s*=\s*"([^"]+)"', linear.M)

MARKER = "srt/server_args.py"
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def _parse(src: str, mode: str) -> ast.AST | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return ast.parse(src, mode=mode)
        except _PARSE_ERRORS:
            return None


def parse_module(src: str) -> ast.Module | None:
    """`src` parsed, or None when it does not parse. The warnings Python gives about the
    text itself (an invalid escape such as "\\-") stay quiet: it is sglang's code, not ours."""
    tree = _parse(src, "exec")
    return tree if isinstance(tree, ast.Module) else None


def parse_expression(src: str) -> ast.expr | None:
    """The expression `src` parsed, or None (as `parse_module`)."""
    tree = _parse(src, "eval")
    return tree.body if isinstance(tree, ast.Expression) else None


@dataclass(frozen=True)
class SourceTree:
    """The files of one `sglang` package, by path relative to the package root."""

    description: str
    files: dict[str, str] = field(repr=False)  # lazily read: rel path -> where to read it
    metadata_version: str | None = None
    _zip: zipfile.ZipFile | None = field(default=None, repr=False, compare=False)
    _root: Path | None = field(default=None, repr=False, compare=False)
    _texts: dict[str, str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_texts(cls, texts: dict[str, str], description: str = "<memory>") -> SourceTree:
        """A tree held in memory (tests, and sources already read from a bundle)."""
        return cls(description, dict.fromkeys(texts, ""), _texts=dict(texts))

    def names(self) -> Iterator[str]:
        return iter(sorted(self.files))

    def read(self, rel: str) -> str | None:
        """Text of `rel` (e.g. "srt/environ.py"), or None when absent or undecodable."""
        where = self.files.get(rel)
        if where is None:
            return None
        if self._texts is not None:
            return self._texts.get(rel)
        try:
            if self._zip is not None:
                data = self._zip.read(where)
            else:
                data = Path(where).read_bytes()
        except (OSError, KeyError, zipfile.BadZipFile):
            return None
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_VERSION_LINE = linear.compile(r"^Version:\s*(\S+)\s*$", linear.M)


def _open_wheel(path: Path) -> SourceTree:
    try:
        zf = zipfile.ZipFile(path)
        names = zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise PdforensicsError(f"unreadable wheel {path}: {exc}") from exc
    prefix = next((n[: -len(MARKER)] for n in names if n.endswith("sglang/" + MARKER)), None)
    if prefix is None:
        zf.close()
        raise PdforensicsError(f"not an sglang wheel (no sglang/{MARKER}): {path}")
    files = {
        n[len(prefix):]: n
        for n in names
        if n.startswith(prefix) and n.endswith(".py") and not n.endswith("/")
    }
    meta_version = None
    meta = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
    if meta is not None:
        try:
            m = _VERSION_LINE.search(zf.read(meta).decode("utf-8", "replace"))
            meta_version = m.group(1) if m else None
        except (OSError, KeyError, zipfile.BadZipFile):
            meta_version = None
    desc = f"{path.name} sha256:{_sha256(path)}"
    return SourceTree(desc, files, meta_version, _zip=zf)


def _find_package_dir(path: Path) -> Path | None:
    """The `sglang` package dir at, inside, or below the usual places under `path`."""
    candidates = [path, path / "sglang", path / "python" / "sglang"]
    candidates += sorted(path.glob("lib/python3*/site-packages/sglang"))
    candidates += sorted(path.glob("*/sglang"))
    for c in candidates:
        if (c / MARKER).is_file():
            return c
    return None


def _dist_info_version(pkg: Path) -> str | None:
    for meta in sorted(pkg.parent.glob("sglang-*.dist-info/METADATA")):
        try:
            m = _VERSION_LINE.search(meta.read_text("utf-8", "replace"))
        except OSError:
            continue
        if m:
            return m.group(1)
    for pyproject in (pkg.parent / "pyproject.toml", pkg.parent.parent / "pyproject.toml"):
        try:
            text = pyproject.read_text("utf-8", "replace")
        except OSError:
            continue
        if _NAME_SGLANG.search(text):
            m = _VERSION_LINE.search(text)
            if m:
                return m.group(1)
    return None


def _open_dir(path: Path) -> SourceTree:
    pkg = _find_package_dir(path)
    if pkg is None:
        raise PdforensicsError(f"not an sglang tree (no sglang/{MARKER} found): {path}")
    files = {p.relative_to(pkg).as_posix(): str(p) for p in pkg.rglob("*.py") if p.is_file()}
    return SourceTree(f"{pkg.resolve()}", files, _dist_info_version(pkg), _root=pkg)


def _read_bundle_file(bundle: Path, path: Path) -> str:
    """A file of a bundle through the safe reader (no links, FIFOs, devices, oversize)."""
    from pdforensics.untrusted.read import read_inside

    rel = path.relative_to(bundle).as_posix()
    return read_inside(bundle, rel, rel).decode("utf-8", "replace")


def _open_archive(path: Path, text: str | None = None) -> SourceTree:
    """The JSON-lines copy `capture --with-sglang-source` keeps of a server's sglang files."""
    from pdforensics.catalog.archive import parse_sglang_source

    try:
        src = parse_sglang_source(text if text is not None else path.read_text("utf-8", "replace"))
    except (OSError, PdforensicsError) as exc:
        raise PdforensicsError(f"unreadable sglang source copy {path}: {exc}") from None
    if not src.files:
        raise PdforensicsError(f"no sglang files in {path}")
    texts = dict(src.files)
    return SourceTree(f"{src.package} (copied into {path})", dict.fromkeys(texts, ""), src.version,
                      _texts=texts)


def _bundle_archive(bundle: Path) -> Path:
    """The one sglang source copy in a bundle (several servers must agree on the version)."""
    from pdforensics.catalog.archive import parse_sglang_source

    copies = sorted(bundle.glob("raw/*/sglang_source*.jsonl"))
    if not copies:
        raise PdforensicsError(f"{bundle} holds no sglang source: capture it with --with-sglang-source")
    versions = {}
    for c in copies:
        head = _read_bundle_file(bundle, c).split("\n", 2)
        versions[c] = parse_sglang_source("\n".join(head[:2])).version
    if len(set(versions.values())) > 1:
        listing = ", ".join(f"{c.parent.name}: {v}" for c, v in versions.items())
        raise PdforensicsError(f"the servers run different sglang versions ({listing}); "
                               f"pass one file: {copies[0]}")
    return copies[0]


def open_source(path: Path) -> SourceTree:
    """Open a wheel, a directory holding an sglang package, a bundle captured with
    --with-sglang-source, or one of its raw/*/sglang_source*.jsonl copies."""
    if not path.exists():
        raise PdforensicsError(f"path not found: {path}")
    if path.is_dir() and (path / "manifest.json").is_file():
        copy = _bundle_archive(path)
        return _open_archive(copy, _read_bundle_file(path, copy))
    if path.is_dir():
        return _open_dir(path)
    if path.suffix == ".jsonl":
        return _open_archive(path)
    if path.suffix in (".whl", ".zip"):
        return _open_wheel(path)
    if zipfile.is_zipfile(path):
        return _open_wheel(path)
    raise PdforensicsError(f"not an sglang wheel or directory: {path}")
