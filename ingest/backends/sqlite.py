"""SQLite connections for the embedded adapters, WAL checkpoints off the write path, and what
sqlite3's errors mean for the adapters (`backend_error`, `translated`)."""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ingest.backends.errors import BackendError, BackendFailure, BackendUnavailable

BUSY_TIMEOUT_S = 30  # how long a statement waits for another connection's lock
WAL_LIMIT_BYTES = 256 << 20  # a write-ahead log past this is started over, then cut back to it
#: bytes per page of a new `lodestar.db` (aspects and topics; SQLite's default is 4 KiB): versions
#: and MCLs of a few KB each fit in a page with others instead of spilling to overflow pages, and
#: a batch's commit writes fewer pages to the write-ahead log (a third of the commit's CPU)
PAGE_SIZE = 16384
_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})  # primary result codes

# sqlite3 binds str, int and float as they are, but looks a bytes parameter up as an object to
# adapt (two attribute lookups that fail with exceptions): about a fifth of the binding of a
# row of MCL or system-metadata bytes. Adapted by `bytes`, which returns a bytes object itself.
sqlite3.register_adapter(bytes, bytes)

Adapter = TypeVar("Adapter")
Params = ParamSpec("Params")
Result = TypeVar("Result")


def backend_error(err: sqlite3.Error, path: Path | str) -> BackendError:
    """A sqlite3 error on the database at `path` as a backend error: BackendUnavailable when the
    database stayed busy or locked (another connection held its lock past BUSY_TIMEOUT_S), else
    BackendFailure (a full disk, a damaged file, a statement SQLite refuses)."""
    code = getattr(err, "sqlite_errorcode", None)  # extended code; none for errors of the module itself
    kind = BackendUnavailable if code is not None and code & 0xFF in _BUSY else BackendFailure
    return kind(f"SQLite database {path}: {err}")


def translated(database: Callable[[Any], Path]
               ) -> Callable[[Callable[Concatenate[Adapter, Params], Result]],
                             Callable[Concatenate[Adapter, Params], Result]]:
    """A decorator for an adapter's methods: sqlite3's errors are raised as backend errors
    (`backend_error`), naming the database `database(adapter)`. For methods called once per
    query or batch; what runs inside a batch is translated where the batch ends."""

    def decorate(method: Callable[Concatenate[Adapter, Params], Result]
                 ) -> Callable[Concatenate[Adapter, Params], Result]:
        @functools.wraps(method)
        def run(adapter: Adapter, *args: Params.args, **kwargs: Params.kwargs) -> Result:
            try:
                return method(adapter, *args, **kwargs)
            except sqlite3.Error as err:
                raise backend_error(err, database(adapter)) from err

        return run

    return decorate


def connect(path: Path, page_size: int | None = None) -> sqlite3.Connection:
    """A connection tuned for the embedded stores: WAL, NORMAL sync (durable across process
    crashes; fsync happens at checkpoints), autocommit mode, no automatic checkpoints. A new
    database gets pages of `page_size` bytes (default: SQLite's); an existing one keeps its own.
    Raises backend errors (`backend_error`), not sqlite3's."""
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as err:
        raise backend_error(err, path) from err
    try:
        if page_size is not None:
            conn.execute(f"PRAGMA page_size={int(page_size)}")
        _use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # a WalCheckpointer does it, so commits stay cheap
        conn.execute("PRAGMA cache_size=-65536")
    except sqlite3.Error as err:
        conn.close()
        raise backend_error(err, path) from err
    return conn


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, which a new database's first connection does. The switch needs an
    exclusive lock, and when processes race to switch a new database (the processes of
    `serve --workers` starting on an empty data directory), SQLite answers "database is locked"
    at once instead of waiting: each holds a shared lock the other would wait for. So the
    switch is tried again until BUSY_TIMEOUT_S."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if err.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.005)


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


class WalLimit:
    """Keeps a database's write-ahead log from growing without end under writes that never pause.

    A log starts over from its beginning only when a writer begins while every frame of it has
    been copied into the database and no reader is still reading from it; passive checkpoints
    running beside writers that never pause never get there. So a writer calls `after_commit`
    right after its commit, still holding its own locks (no writer of its own appends
    meanwhile): past `limit` bytes, a RESTART checkpoint copies what the passive ones have not
    copied yet and, if no reader is in the log (it never waits for one, as writers would wait
    with it), has the next write start the log over and cut the file back to `limit`. It is
    tried at most every `every` seconds while the log stays too long."""

    def __init__(self, path: Path, limit: int = WAL_LIMIT_BYTES, every: float = 0.1):
        self._wal = f"{path}-wal"
        self._limit = limit
        self._every = every
        self._next_try = 0.0

    def after_commit(self, conn: sqlite3.Connection) -> None:
        now = time.monotonic()
        if now < self._next_try:
            return
        try:
            size = os.stat(self._wal).st_size
        except FileNotFoundError:
            return
        if size <= self._limit:
            return
        self._next_try = now + self._every
        conn.execute(f"PRAGMA journal_size_limit={self._limit}")  # the write starting the log over cuts it back
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("PRAGMA wal_checkpoint(RESTART)")
        finally:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
