"""The embedded aspect store: SQLite (WAL), by default in `<data dir>/lodestar.db`."""

from __future__ import annotations

import fcntl
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import groupby
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from gms.store import AspectBatch, AspectStore, OutboxMessage, StoredAspect
from ingest.backends.sqlite import WalCheckpointer, WalLimit, backend_error, connect, translated
from ingest.eventlog import LogMessage
from ingest.eventlog.sqlite import SqliteEventLog

_SCHEMA = """
CREATE TABLE IF NOT EXISTS aspects (
    urn TEXT NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL,
    value TEXT, system_metadata TEXT NOT NULL,
    PRIMARY KEY (urn, aspect, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    topic TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS store_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_COLUMNS = "urn, aspect, version, value, system_metadata"
_translated = translated(attrgetter("path"))  # sqlite3's errors raised as ingest.backends.errors


def _row(row: tuple[Any, ...]) -> StoredAspect:
    return StoredAspect(row[0], row[1], row[2], row[3], orjson.loads(row[4]))


class _Reads:
    """Queries shared by the store (autocommit reads) and a batch (inside its transaction)."""

    conn: sqlite3.Connection

    def _latest(self, urn: str, aspect: str) -> StoredAspect | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM aspects WHERE urn = ? AND aspect = ? ORDER BY version DESC LIMIT 1",
            (urn, aspect),
        ).fetchone()
        return _row(row) if row else None

    def _live(self, urn: str) -> list[StoredAspect]:
        # SQLite returns the other columns of the row holding max(version).
        rows = self.conn.execute(
            "SELECT urn, aspect, max(version), value, system_metadata FROM aspects WHERE urn = ? GROUP BY aspect",
            (urn,),
        ).fetchall()
        return [_row(row) for row in rows if row[3] is not None]


class SqliteBatch(AspectBatch, _Reads):
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.events: list[OutboxMessage] = []  # written when the batch commits

    def latest(self, urn: str, aspect: str) -> StoredAspect | None:
        return self._latest(urn, aspect)

    def live_aspects(self, urn: str) -> list[StoredAspect]:
        return self._live(urn)

    def insert(self, row: StoredAspect, outbox: Sequence[OutboxMessage]) -> bool:
        try:
            self.conn.execute(
                "INSERT INTO aspects VALUES (?, ?, ?, ?, ?)",
                (row.urn, row.aspect, row.version, row.value_json, orjson.dumps(row.system_metadata)),
            )
        except sqlite3.IntegrityError:
            return False
        self.append_outbox(outbox)
        return True

    def refresh(self, urn: str, aspect: str, version: int, system_metadata: dict[str, Any]) -> None:
        self.conn.execute(
            "UPDATE aspects SET system_metadata = ? WHERE urn = ? AND aspect = ? AND version = ?",
            (orjson.dumps(system_metadata), urn, aspect, version),
        )

    def append_outbox(self, outbox: Sequence[OutboxMessage]) -> None:
        self.events.extend(outbox)

    def purge(self, urn: str) -> None:
        self.conn.execute("DELETE FROM aspects WHERE urn = ?", (urn,))


class SqliteAspectStore(AspectStore, _Reads):
    """One writer connection (serialised by a lock and BEGIN IMMEDIATE, so other processes
    on the same file are excluded too) and one reader connection per thread.

    Given an embedded event log in the same database file, a batch appends its MCLs to
    that log in its own transaction: the outbox stays empty and nothing needs relaying.
    Otherwise MCLs wait in the outbox table for the relay.

    sqlite3's errors are raised as ingest.backends.errors: by each method, and for a batch's
    operations by `batch()` as it ends (nothing is added per operation)."""

    @_translated
    def __init__(self, path: Path, colocated_log: SqliteEventLog | None = None):
        self.path = Path(path)
        if colocated_log is not None and colocated_log.path.resolve() != self.path.resolve():
            raise ValueError("a co-located event log must use the aspect store's database file")
        self._log = colocated_log
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._lockfile = open(f"{self.path}.lock", "a")  # noqa: SIM115 - held for the store's lifetime
        self._writer = connect(self.path)
        self._writer.executescript(_SCHEMA)
        self._checkpointer = None if colocated_log is not None else WalCheckpointer(self.path)
        self._wal_limit = WalLimit(self.path)
        self._writer.execute("INSERT OR IGNORE INTO store_meta VALUES ('producer_id', ?)", (uuid.uuid4().hex,))
        (self._producer_id,) = self._writer.execute(
            "SELECT value FROM store_meta WHERE name = 'producer_id'").fetchone()

    @property
    def producer_id(self) -> str:
        return self._producer_id

    @property
    def conn(self) -> sqlite3.Connection:  # the reader of the calling thread
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
        return conn

    @contextmanager
    def batch(self) -> Iterator[AspectBatch]:
        try:
            with self._write_lock, self._process_lock():
                self._writer.execute("BEGIN IMMEDIATE")
                batch = SqliteBatch(self._writer)
                try:
                    yield batch
                    self._write_events(batch.events)
                except BaseException:
                    self._writer.execute("ROLLBACK")
                    raise
                self._writer.execute("COMMIT")
                self._wal_limit.after_commit(self._writer)
        except sqlite3.Error as err:
            raise backend_error(err, self.path) from err
        if self._log is not None and batch.events:
            self._log.notify_appended()

    @contextmanager
    def _process_lock(self) -> Iterator[None]:
        """Writers in other processes wait here rather than in SQLite's sleeping busy handler,
        so the write lock passes from one GMS process to the next without delay."""
        fcntl.flock(self._lockfile, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lockfile, fcntl.LOCK_UN)

    def _write_events(self, events: list[OutboxMessage]) -> None:
        if self._log is None:
            self._writer.executemany("INSERT INTO outbox (topic, key, value) VALUES (?, ?, ?)",
                                     [(m.topic, m.key, m.value) for m in events])
            return
        for topic, group in groupby(events, key=lambda m: m.topic):
            self._log.append_in_transaction(self._writer, topic, [LogMessage(m.key, m.value) for m in group])

    @_translated
    def get(self, urn: str, aspect: str, version: int | None = None) -> StoredAspect | None:
        if version is None:
            return self._latest(urn, aspect)
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM aspects WHERE urn = ? AND aspect = ? AND version = ?", (urn, aspect, version)
        ).fetchone()
        return _row(row) if row else None

    @_translated
    def history(self, urn: str, aspect: str) -> list[StoredAspect]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM aspects WHERE urn = ? AND aspect = ? ORDER BY version", (urn, aspect)
        ).fetchall()
        return [_row(row) for row in rows]

    @_translated
    def entity(self, urn: str) -> list[StoredAspect]:
        return self._live(urn)

    @_translated
    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, OutboxMessage]]:
        rows = self.conn.execute(
            "SELECT id, topic, key, value FROM outbox ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [(row[0], OutboxMessage(*row[1:])) for row in rows]

    @_translated
    def ack_outbox(self, ids: Sequence[int]) -> None:
        if ids:
            with self._write_lock:
                self._writer.execute("DELETE FROM outbox WHERE id <= ?", (max(ids),))

    @_translated
    def scan_latest(self, after: tuple[str, str] | None = None, limit: int = 1000) -> Iterator[StoredAspect]:
        urn, aspect = after or ("", "")
        rows = self.conn.execute(
            "SELECT urn, aspect, max(version), value, system_metadata FROM aspects"
            " WHERE (urn, aspect) > (?, ?) GROUP BY urn, aspect HAVING value IS NOT NULL"
            " ORDER BY urn, aspect LIMIT ?",
            (urn, aspect, limit),
        ).fetchall()
        return (_row(row) for row in rows)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._writer.close()
        self._lockfile.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
