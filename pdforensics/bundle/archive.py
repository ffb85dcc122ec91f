"""One file to attach: BUNDLE.tar.gz beside the bundle, written once the bundle is finished
(its analysis.json and report.html inside). Regular files and directories only, every member
under the bundle's own name, private permissions, written under a temporary name and renamed,
so a half-written archive never has the final name. `pdforensics.untrusted.archive` reads it
back (analyze, report, verify, diff and triage take the .tar.gz directly)."""

from __future__ import annotations

import os
import stat
import tarfile
import tempfile
from pathlib import Path

from pdforensics.bundle.ondisk import FILE_MODE
from pdforensics.errors import BundleError

SUFFIX = ".tar.gz"


def archive_path(bundle: Path) -> Path:
    """Where a bundle's archive goes: beside it, named after it."""
    return bundle.with_name(bundle.name + SUFFIX)


def _add_tree(tar: tarfile.TarFile, root: Path) -> None:
    """The bundle's directories and regular files (a link or a special file is left out:
    the writer never makes one, and the archive must hold nothing a reader refuses)."""
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        here = Path(dirpath)
        rel = here.relative_to(root.parent).as_posix()
        tar.add(here, arcname=rel, recursive=False)
        for name in sorted(files):
            p = here / name
            if name.endswith(".tmp") or not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            info = tar.gettarinfo(str(p), arcname=f"{rel}/{name}")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(p, "rb") as fh:
                tar.addfile(info, fh)


def write_archive(bundle: Path) -> Path:
    """BUNDLE.tar.gz beside BUNDLE (mode 0600); BundleError with the reason when it cannot."""
    target = archive_path(bundle)
    try:
        fd, tmp = tempfile.mkstemp(dir=str(bundle.parent), prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise BundleError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh, tarfile.open(fileobj=fh, mode="w:gz",
                                                     format=tarfile.PAX_FORMAT) as tar:
            _add_tree(tar, bundle)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise BundleError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
