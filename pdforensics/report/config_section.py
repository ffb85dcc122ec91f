"""Configuration: prefill vs decode side by side (flags and env), mismatches highlighted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdforensics.catalog.cmdline import parse_flags
from pdforensics.catalog.model import Catalog
from pdforensics.redact.redactor import MARKER, is_secret_name
from pdforensics.views.loaded import LoadedCapture, ServiceView

#: shown for a secret-named value that the bundle holds unredacted (older or foreign bundle)
HIDDEN = "<hidden: secret-looking name, not redacted in the bundle>"
#: flag names whose values the redactor treats as secrets (see redact_detectors)
ENV_PREFIXES = ("SGLANG_", "NCCL_", "CUDA_", "MC_", "UCX_", "NVSHMEM_", "TORCH_")
#: Flags and env vars that differ between roles by design: shown, not flagged.
ROLE_SPECIFIC = frozenset({
    "--disaggregation-mode", "--port", "--host", "--disaggregation-bootstrap-port",
    "--base-gpu-id", "--dist-init-addr", "--node-rank", "CUDA_VISIBLE_DEVICES",
    "--cuda-graph-max-bs-decode", "--served-model-name",
})


@dataclass(frozen=True)
class ConfigRow:
    key: str
    values: tuple[str | None, ...]  # None: not set on that server
    state: str  # same | differs | expected
    secret: bool


@dataclass(frozen=True)
class ConfigView:
    columns: tuple[str, ...]
    flags: tuple[ConfigRow, ...]
    env: tuple[ConfigRow, ...]
    mismatches: int
    routers: tuple[tuple[str, str], ...]  # (router label, cmdline)
    notes: tuple[str, ...] = ()  # e.g. the servers run another sglang than the catalog is for


def flags_of(argv: Sequence[str], catalog: Catalog | None) -> dict[str, str]:
    """The diff's flag parser (catalog-aware); a bare switch reads "(set)", secrets hidden."""
    out = {}
    for k, v in parse_flags(argv, catalog).items():
        if v is None:
            out[k] = "(set)"
        elif is_secret_name(k) and not MARKER.fullmatch(v.encode()):
            out[k] = HIDDEN
        else:
            out[k] = v
    return out


def _catalog() -> Catalog | None:
    try:
        from pdforensics.catalog import load_shipped_catalog

        return load_shipped_catalog()
    except Exception:  # a broken catalog costs the alias mapping, not the section
        return None


def _rows(keys: Sequence[str], cols: Sequence[dict[str, str]]) -> list[ConfigRow]:
    rows = []
    for k in keys:
        vals = tuple(c.get(k) for c in cols)
        secret = any(v is not None and ("<redacted:" in v or v == HIDDEN) for v in vals)
        if len(set(vals)) <= 1:
            state = "same"
        elif k in ROLE_SPECIFIC:
            state = "expected"
        else:
            state = "differs"
        rows.append(ConfigRow(k, vals, state, secret))
    order = {"differs": 0, "expected": 1, "same": 2}
    return sorted(rows, key=lambda r: (order[r.state], r.key))


def _env(s: ServiceView) -> dict[str, str]:
    """The PD-relevant env vars, plus every secret-named one (its value only as a marker)."""
    out = {}
    for k, v in s.environ.items():
        secret = is_secret_name(k) or "<redacted:" in v
        if not (secret or k.startswith(ENV_PREFIXES)):
            continue
        out[k] = v if not is_secret_name(k) or MARKER.fullmatch(v.encode()) else HIDDEN
    return out


def build_config(capture: LoadedCapture) -> tuple[ConfigView | None, list[str]]:
    """Servers side by side, prefill first; routers' command lines below."""
    servers = [s for s in capture.services() if s.kind == "server"]
    servers.sort(key=lambda s: ({"prefill": 0, "unified": 1, "decode": 2}.get(s.role, 3), s.host))
    missing: list[str] = []
    routers = tuple((s.label, " ".join(s.cmdline) or "(cmdline not captured)")
                    for s in capture.services() if s.kind == "router")
    if not servers:
        missing.append("no prefill or decode server captured: nothing to compare")
        if not routers:
            return None, missing
    catalog = _catalog()
    flags = [flags_of(s.cmdline, catalog) for s in servers]
    envs = [_env(s) for s in servers]
    for s, f, e in zip(servers, flags, envs, strict=True):
        if not f:
            missing.append(f"{s.label}: command line not captured")
        if not s.environ:
            missing.append(f"{s.label}: environment not captured (needs read access to "
                           f"/proc/{s.root_pid}/environ)")
        elif not e:
            missing.append(f"{s.label}: no SGLANG_/NCCL_/CUDA_ variables set")
    fkeys = sorted({k for f in flags for k in f})
    ekeys = sorted({k for e in envs for k in e})
    frows, erows = _rows(fkeys, flags), _rows(ekeys, envs)
    mism = sum(1 for r in frows + erows if r.state == "differs")
    return ConfigView(columns=tuple(s.label for s in servers), flags=tuple(frows),
                      env=tuple(erows), mismatches=mism, routers=routers,
                      notes=_version_notes(capture, catalog)), missing


def _version_notes(capture: LoadedCapture, catalog: Catalog | None) -> tuple[str, ...]:
    """The diff's catalog-version notes (server sglang version vs the catalog's)."""
    if catalog is None:
        return ()
    from pdforensics.diff.compare import version_notes
    from pdforensics.diff.state import extract_state

    try:
        return tuple(version_notes(extract_state(capture, catalog), catalog))
    except Exception as exc:  # a note is not worth the section
        return (f"sglang version check failed: {type(exc).__name__}: {exc}",)
