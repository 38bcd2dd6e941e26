"""SQLite connections for the embedded adapters, and WAL checkpoints off the write path."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


def connect(path: Path) -> sqlite3.Connection:
    """A connection tuned for the embedded stores: WAL, NORMAL sync (durable across process
    crashes; fsync happens at checkpoints), autocommit mode, no automatic checkpoints."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # a WalCheckpointer does it, so commits stay cheap
    conn.execute("PRAGMA cache_size=-65536")
    return conn


class WalCheckpointer:
    """Copies a database's write-ahead log into it from a background thread.

    A PASSIVE checkpoint never blocks writers, and SQLite releases the GIL while it works, so
    the copying and its fsync run beside the writers instead of inside their commits."""

    def __init__(self, path: Path, interval: float = 0.5):
        self._path = path
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"checkpoint-{path.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn = connect(self._path)
        try:
            while not self._stop.wait(self._interval):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
