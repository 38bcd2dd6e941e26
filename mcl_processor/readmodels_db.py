"""The embedded read-model database, `<data dir>/readmodels.db` (SQLite, WAL).

sqlite3's errors are raised as ingest.backends.errors: by `Database.transaction` for what is
written in it, by `consistent_read` and `model_errors` for the read models' queries."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from ingest.backends.sqlite import BUSY_TIMEOUT_S, WalCheckpointer, WalLimit, backend_error, connect, translated
from mcl_processor.changes import chunks

FILE_NAME = "readmodels.db"
PAGE_SIZE = 16384  # bytes, for a new database: a batch's commit writes fewer, larger pages to the
# write-ahead log (two system calls each) than with SQLite's 4 KiB; restores ran 12-24% faster
SCHEMA_WAIT_S = 600  # an opening waits this long for another process bringing the tables up to date
SCHEMA_CHANGE_ATTEMPTS = 5  # a query is tried this many times while other connections change the schema


class Database:
    """One writer connection (the processor's; transactions serialised across threads and, by
    BEGIN IMMEDIATE, processes) and one reader connection per querying thread."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.writer = _connect(self.path)
        self._checkpointer = WalCheckpointer(self.path)
        self._wal_limit = WalLimit(self.path)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self.transactions = 0  # write transactions begun: what a model remembers of one is valid while it lasts

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on the writer connection; nested uses join the outer one."""
        with self._lock:
            if self.writer.in_transaction:
                yield self.writer
                return
            try:
                self.writer.execute("BEGIN IMMEDIATE")
                self.transactions += 1
                try:
                    yield self.writer
                except BaseException:
                    self.writer.execute("ROLLBACK")
                    raise
                self.writer.execute("COMMIT")
                self._wal_limit.after_commit(self.writer)
            except sqlite3.Error as err:
                raise backend_error(err, self.path) from err

    @contextmanager
    def schema_change(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that creates or updates a model's tables at its opening. It waits
        up to SCHEMA_WAIT_S for the write lock: another process may be updating the same tables,
        which takes a while for a big index."""
        self.writer.execute(f"PRAGMA busy_timeout = {SCHEMA_WAIT_S * 1000}")
        try:
            with self.transaction() as conn:
                yield conn
        finally:
            self.writer.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")

    def reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect(self.path)
            with self._lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """This thread's reader connection in one read transaction: every statement inside sees
        the same state of the database (a rebuild's switch lands before them all or after them
        all); nested uses join the outer one."""
        conn = self.reader()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")  # a read transaction: this only lets the snapshot go

    def close(self) -> None:
        self._checkpointer.close()
        with self._lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self.writer.close()


class _OnDatabase(Protocol):
    db: Database


Model = TypeVar("Model", bound=_OnDatabase)
Params = ParamSpec("Params")
Result = TypeVar("Result")
#: A read model's method, raising sqlite3's errors as ingest.backends.errors (for its queries
#: that are no `consistent_read`; writes are translated by `Database.transaction`).
model_errors = translated(lambda model: model.db.path)


def consistent_read(
        query: Callable[Concatenate[Model, Params], Result]) -> Callable[Concatenate[Model, Params], Result]:
    """Runs a read model's query method in one snapshot (`Database.snapshot`), and again when
    another connection changed the schema as it started: after a rebuild's switch renamed
    tables, SQLite may fail a virtual table's constructor once with SQLITE_SCHEMA. sqlite3's
    errors are raised as ingest.backends.errors."""

    @functools.wraps(query)
    def run(model: Model, *args: Params.args, **kwargs: Params.kwargs) -> Result:
        attempt = 1
        while True:
            try:
                with model.db.snapshot():
                    return query(model, *args, **kwargs)
            except sqlite3.Error as error:
                schema_changed = getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_SCHEMA
                if not schema_changed or attempt == SCHEMA_CHANGE_ATTEMPTS:
                    raise backend_error(error, model.db.path) from error
                attempt += 1

    return run


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a SQL script's statements one by one on `conn`, inside its current transaction
    (`executescript` would commit that transaction first)."""
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):  # a trigger's body keeps its own semicolons
            if pending.strip(" \n;"):
                conn.execute(pending)
            pending = ""


def table_exists(conn: sqlite3.Connection, table: str) -> bool:
    """Whether a table (or virtual table) of this name exists."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return found is not None


Key = TypeVar("Key", int, str)


def versions_of(conn: sqlite3.Connection, table: str, key: str, keys: Iterable[Key],
                where: str = "") -> dict[tuple[Key, str], int]:
    """{(key, aspect): version} from a read model's table of aspect versions (columns `key`,
    `aspect`, `version`) for these keys, and only rows matching the SQL condition `where` when
    given; the keys go in `IN (...)` lists of at most `chunks`' size (SQLite's parameter limit)."""
    condition = f" AND {where}" if where else ""
    found: dict[tuple[Key, str], int] = {}
    for chunk in chunks(sorted(set(keys))):
        marks = ",".join("?" * len(chunk))
        for row_key, aspect, version in conn.execute(
                f"SELECT {key}, aspect, version FROM {table} WHERE {key} IN ({marks}){condition}", chunk):
            found[(row_key, aspect)] = version
    return found


def _connect(path: Path) -> sqlite3.Connection:
    """A connection reading pages with read(2), not through a memory map: the kernel reads
    around every page fault in a mapped file as much as it reads ahead of a sequential reader
    (`read_ahead_kb`, 8 MiB on some disks), so a query meeting pages the page cache had dropped
    read megabytes per page (20 free-text queries on 100,000 datasets read 1 GiB, against 22 MiB
    with read(2))."""
    return connect(path, PAGE_SIZE)

