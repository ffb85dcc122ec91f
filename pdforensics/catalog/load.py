"""Lazy loading of the catalog shipped as package data, and version-mismatch notes."""

from __future__ import annotations

import functools
from importlib import resources

from pdforensics.catalog.model import Catalog
from pdforensics.errors import PdforensicsError

# The sglang release the shipped catalog was generated from (see data/README.md).
PINNED_VERSION = "0.5.23"


def shipped_version() -> str:
    """The sglang version of the catalog that ships with pdforensics."""
    return PINNED_VERSION


def shipped_path_name() -> str:
    return f"sglang-{PINNED_VERSION}.json"


@functools.cache
def load_shipped_catalog() -> Catalog:
    """The shipped catalog, read and parsed on first use only."""
    ref = resources.files("pdforensics.catalog").joinpath("data").joinpath(shipped_path_name())
    try:
        text = ref.read_text(encoding="utf-8")
    except (OSError, FileNotFoundError) as exc:
        raise PdforensicsError(f"shipped catalog missing: {shipped_path_name()}") from exc
    return Catalog.from_json(text)


def version_note(server_version: str | None, catalog: Catalog) -> str | None:
    """One line for report/diff when `catalog` is not for `server_version`, else None."""
    if server_version is None:
        return (f"sglang version of the server unknown; names checked against the "
                f"sglang {catalog.version} catalog")
    if server_version.strip().lstrip("v") == catalog.version:
        return None
    return (f"server runs sglang {server_version} but the catalog is for sglang "
            f"{catalog.version}; for an exact one run `pdforensics catalog build --from "
            f"<sglang wheel or the bundle's sglang source>`")
