"""The data directory and what Lodestar writes in it belong to the user running Lodestar alone.

The databases hold every piece of metadata, readable without any grant, so the data directory
is 0700 and the files Lodestar makes in it 0600: the `lodestar` command runs with the umask 077
(`restrict`), so whatever it creates (databases and their -wal/-shm, locks, the admin token, the
instance id, metrics files, an access log) is its user's only; `lodestar serve` tightens a data
directory made before (`tighten`), saying so in its log.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)
UMASK = 0o077
OWN = ("*.db", "*.db-wal", "*.db-shm", "*.db-journal", "*.lock", "*.token", "instance.id", "metrics", "*.yml")


def restrict() -> None:
    """Make what this process (and those it forks) creates from now on private to its user."""
    os.umask(UMASK)


def tighten(data_dir: Path) -> int:
    """Take the group's and others' permissions off the data directory and off Lodestar's files
    in it (OWN: databases and their -wal/-shm/-journal, locks, the admin token, the instance id,
    the metrics directory; other files are left alone, symbolic links are not followed); how many
    entries changed, said in the log when any did."""
    changed = _private(data_dir)
    for entry in sorted(data_dir.iterdir()):
        if not any(fnmatch.fnmatch(entry.name, pattern) for pattern in OWN):
            continue
        changed += _private(entry)
        if entry.is_dir() and not entry.is_symlink():
            changed += sum(_private(inner) for inner in entry.rglob("*"))
    if changed:
        log.warning("data directory %s: took the group's and others' permissions off %d entries (the metadata"
                    " is to be readable by its owner only: docs/operations.md)", data_dir, changed)
    return changed


def _private(path: Path) -> int:
    """1 when the group's and others' permissions were taken off path, 0 when it had none (or is a link)."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode) or not stat.S_IMODE(mode) & UMASK:
        return 0
    path.chmod(stat.S_IMODE(mode) & ~UMASK)
    return 1
