"""Where the store lives: `--store`, else the cluster file's `store`, else the user data dir."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from pdforensics.model import ClusterSpec


def default_store() -> Path:
    return Path(platformdirs.user_data_dir("pdforensics")) / "store"


def store_for(cluster: ClusterSpec | None, explicit: str | None) -> Path:
    """The store directory to use (not created here)."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if cluster is not None and cluster.store:
        return Path(cluster.store).expanduser().resolve()
    return default_store()
