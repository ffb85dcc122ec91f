"""SGLang flags, env vars and metric names, generated from sglang's own source."""

from __future__ import annotations

from pathlib import Path

from pdforensics.catalog.aliases import METRIC_ALIASES, canonical_metric
from pdforensics.catalog.build import build_catalog, write_catalog
from pdforensics.catalog.load import load_shipped_catalog, shipped_version, version_note
from pdforensics.catalog.model import Catalog, EnvInfo, FlagInfo, MetricInfo

__all__ = [
    "METRIC_ALIASES", "Catalog", "EnvInfo", "FlagInfo", "MetricInfo", "build_catalog",
    "canonical_metric", "cli_build", "load_shipped_catalog", "shipped_version",
    "version_note", "write_catalog",
]


def cli_build(src: str, out: str | None) -> Path:
    """`pdforensics catalog build --from SRC [-o OUT]`: build and write; return the file.

    OUT defaults to `./sglang-<version>.json`. Errors are one-line PdforensicsErrors.
    """
    catalog = build_catalog(Path(src).expanduser())
    target = Path(out) if out else Path.cwd() / f"sglang-{catalog.version}.json"
    try:
        return write_catalog(catalog, target)
    except OSError as exc:
        from pdforensics.errors import PdforensicsError

        raise PdforensicsError(f"cannot write {target}: {exc.strerror or exc}") from exc
