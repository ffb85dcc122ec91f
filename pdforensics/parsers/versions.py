"""Version evidence: ``pip freeze`` / ``pip list``, ``uname -a``, nvidia-smi's header and
``--version``, ``/etc/os-release``.

pip freeze is lenient (unreadable lines go to ``bad_lines``); the others raise ParseError
on non-empty text that carries none of the fields they look for.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pdforensics import linear
from pdforensics.catalog.archive import SglangSource as SglangSource  # re-exported: the collector's parser
from pdforensics.catalog.archive import parse_sglang_source as parse_sglang_source
from pdforensics.errors import ParseError

_ENV_NAME = linear.compile(r"[A-Z_][A-Z0-9_]*")

_NAME_RE = linear.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$")
_EGG_RE = linear.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
_NORM_RE = linear.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` -> ``-``."""
    return _NORM_RE.sub("-", name).lower()


@dataclass(frozen=True)
class Packages(Mapping[str, str]):
    """Frozen mapping normalised package name -> version (or ``@ URL`` / ``-e URL``)."""

    items_: tuple[tuple[str, str], ...] = ()
    bad_lines: tuple[tuple[int, str], ...] = ()
    _map: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False,
                                 hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_map", dict(self.items_))

    def __getitem__(self, name: str) -> str:
        return self._map[normalize_name(name)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize_name(name) in self._map

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)


def _freeze_line(line: str) -> tuple[str, str] | None:
    if line.startswith(("-e ", "--editable ", "--editable=")):
        target = line.split(None, 1)[1] if " " in line else line.split("=", 1)[1]
        egg = _EGG_RE.search(target)
        if egg:
            return normalize_name(egg.group(1)), f"-e {target.strip()}"
        base = target.strip().rstrip("/").rsplit("/", 1)[-1]
        return (normalize_name(base), f"-e {target.strip()}") if base else None
    m = _NAME_RE.match(line)
    if m is None:
        return None
    name, rest = m.group(1), m.group(3).split(";", 1)[0].strip()
    for op in ("===", "=="):
        if rest.startswith(op) and rest[len(op):].strip():
            return normalize_name(name), rest[len(op):].strip()
    if rest.startswith("@") and rest[1:].strip():
        return normalize_name(name), "@ " + rest[1:].strip()
    return None


def parse_pip_freeze(text: str) -> Packages:
    """``pip freeze`` (and ``pip list`` columns) -> Packages; comments and options skipped."""
    items: dict[str, str] = {}
    bad: list[tuple[int, str]] = []
    columns = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[:2] == ["Package", "Version"]:
            columns = True
            continue
        if columns and set(line) <= {"-", " "}:
            continue
        if columns and len(words) >= 2 and _NAME_RE.match(words[0]):
            items[normalize_name(words[0])] = words[1]
            continue
        if line.startswith(("-i ", "--index-url", "--extra-index-url", "-f ", "--find-links")):
            continue
        got = _freeze_line(line)
        if got is None:
            bad.append((lineno, raw))
        else:
            items[got[0]] = got[1]
    if bad and not items:
        raise ParseError("not pip freeze output", line=bad[0][1], lineno=bad[0][0])
    return Packages(tuple(sorted(items.items())), tuple(bad))


@dataclass(frozen=True)
class UnameInfo:
    """``uname -a`` (or ``uname -r`` alone: only kernel_release)."""

    kernel_name: str | None
    nodename: str | None
    kernel_release: str
    kernel_version: str | None
    machine: str | None
    operating_system: str | None


_ARCH_RE = linear.compile(r"^(x86_64|aarch64|arm64|armv\d\w*|ppc64le|ppc64|s390x|i[3-6]86|riscv64)$")


def parse_uname(text: str) -> UnameInfo | None:
    """Parse ``uname -a`` / ``uname -r``; None for empty text."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return None
    words = lines[0].split()
    if len(words) == 1:
        return UnameInfo(None, None, words[0], None, None, None)
    if len(words) < 3:
        raise ParseError("not uname output", line=lines[0], lineno=1)
    kname, node, release = words[:3]
    tail = words[3:]
    arch_at = next((i for i, w in enumerate(tail) if _ARCH_RE.match(w)), None)
    if arch_at is None:
        version = " ".join(tail) or None
        return UnameInfo(kname, node, release, version, None, None)
    os_name = tail[-1] if tail[-1] != tail[arch_at] and not _ARCH_RE.match(tail[-1]) else None
    return UnameInfo(kname, node, release, " ".join(tail[:arch_at]) or None, tail[arch_at],
                     os_name)


@dataclass(frozen=True)
class NvidiaVersions:
    """Driver, CUDA and nvidia-smi versions as nvidia-smi reports them."""

    driver: str | None
    cuda: str | None
    smi: str | None = None
    nvml: str | None = None


_NV_PATTERNS = {
    "smi": linear.compile(r"NVIDIA-SMI(?: version)?\s*:?\s*([0-9][\w.]*)"),
    "driver": linear.compile(r"(?:Driver Version|DRIVER version)\s*:\s*([0-9][\w.]*)"),
    "cuda": linear.compile(r"CUDA (?:Version|Driver Version)\s*:\s*([0-9][\w.]*)"),
    "nvml": linear.compile(r"NVML version\s*:\s*([0-9][\w.]*)"),
}


def parse_nvidia_smi_version(text: str) -> NvidiaVersions:
    """From plain ``nvidia-smi``'s header, ``nvidia-smi --version`` or ``-q``."""
    found: dict[str, str] = {}
    for key, pattern in _NV_PATTERNS.items():
        m = pattern.search(text)
        if m:
            found[key] = m.group(1)
    if not found:
        first = next((ln for ln in text.split("\n") if ln.strip()), None)
        if first is not None:
            raise ParseError("no driver or CUDA version in nvidia-smi output", line=first)
    return NvidiaVersions(found.get("driver"), found.get("cuda"), found.get("smi"),
                          found.get("nvml"))


def parse_os_release(text: str) -> tuple[tuple[str, str], ...]:
    """``/etc/os-release`` KEY=value (quotes removed) pairs; bad lines are skipped."""
    out: list[tuple[str, str]] = []
    for raw in text.split("\n"):
        line = raw.strip()
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#") or not _ENV_NAME.fullmatch(key):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value.strip("\"'")]
        out.append((key, " ".join(words)))
    return tuple(out)
